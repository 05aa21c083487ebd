"""Python functions whose exceptions hold text a C string cannot carry, for
tests/cli/text_cli.py (issue #30): a NUL in the middle, a lone surrogate, a
terminal escape. The bridge must pass all of it, escaped, never cut."""


def _deep_helper(q):
    raise ValueError("before\x00after the NUL, a lone surrogate \ud800 and an escape \x1b[2J: tail of the message")


def raises_hostile_text(q, k, v, **kw):
    """Every call raises: the law's message carries the whole text and the traceback."""
    return _deep_helper(q)


