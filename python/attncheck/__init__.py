"""attncheck for pytest: check a Python attention function with the attncheck CLI.

    import attncheck

    def attention(q, k, v, *, mask=None, causal="none", scale=None):
        ...

    def test_attention():
        attncheck.assert_attention(attention)           # AssertionError naming the law

    report = attncheck.check(attention, laws=["matches_oracle"], seed=1)

The function runs in attncheck's Python bridge (an embedded /usr/bin/python3, in a
process of its own), called as docs/python.md's calling convention says; it must be a
module-level function of a file or module (a lambda or a nested function cannot be
named there). Pure Python; needs the attncheck program and its Python bridge
(build with -DATTNCHECK_WITH_PYTHON=ON), found as $ATTNCHECK_BIN, then the source
tree's build/attncheck, then attncheck on PATH.
"""
from ._check import AttncheckError, assert_attention, check, find_attncheck, target_of

__all__ = ["AttncheckError", "assert_attention", "check", "find_attncheck", "target_of"]
