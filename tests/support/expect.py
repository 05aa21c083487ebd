"""expect(cond, message): the end-to-end scripts' check, in place of `assert`.

`assert` is stripped when Python runs with -O (or PYTHONOPTIMIZE is set), and a
script whose checks are gone passes without checking anything. expect() always
runs: when `cond` is false it prints where and why to stderr and exits 1.

Usage, from a script under tests/:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
    from expect import expect
    expect(report["seed"] == 42, f"seed {report['seed']}")

`python3 -O tests/support/expect.py --self-test` checks that a false expect()
fails a script run under -O.
"""
import os
import subprocess
import sys


def expect(cond, message="expectation failed"):
    """Returns when cond is true; otherwise prints the caller's file:line and message, and exits 1."""
    if cond:
        return
    caller = sys._getframe(1)
    where = f"{os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno}"
    text = message if isinstance(message, str) else repr(message)
    print(f"{where}: expectation failed: {text}", file=sys.stderr, flush=True)
    sys.exit(1)


def _self_test():
    here = os.path.dirname(os.path.abspath(__file__))
    script = ("import sys; sys.path.insert(0, %r); from expect import expect\n"
              "expect(1 + 1 == 2, 'arithmetic')\n"
              "expect(False, 'the message')\n"
              "print('went on after a false expect')\n") % here
    p = subprocess.run([sys.executable, "-O", "-c", script], capture_output=True, text=True, timeout=60)
    ok = p.returncode == 1 and "expectation failed: the message" in p.stderr and "went on" not in p.stdout
    print(f"python -O: exit {p.returncode}, stderr {p.stderr.strip()!r}")
    if not ok:
        print("expect() did not stop a script run under -O", file=sys.stderr)
        sys.exit(1)
    print("expect-self-test: a false expect() stops a script under -O with its message")


if __name__ == "__main__" and sys.argv[1:] == ["--self-test"]:
    _self_test()
