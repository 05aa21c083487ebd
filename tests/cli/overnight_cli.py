#!/usr/bin/python3
"""fuzz/overnight.sh as a user meets it: --help is the header and nothing else,
no target built is exit 2 with a message, and on a terminal one progress line
(target, time, libFuzzer's status) is redrawn in place, while a pipe gets none.
The "fuzz targets" here are stand-in scripts that answer like libFuzzer (no
clang build needed): they print a status line and stop after a moment.

Usage: overnight_cli.py SOURCE_DIR WORKDIR    (Debian's /usr/bin/python3)
"""
import os
import shutil
import stat
import subprocess
import sys

from pty_run import run_on_pty

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from expect import expect  # noqa: E402  (not assert: python -O strips asserts)

source_dir, work = (os.path.abspath(a) for a in sys.argv[1:3])
script = os.path.join(source_dir, "fuzz", "overnight.sh")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = {k: v for k, v in os.environ.items() if k not in ("CI", "ATTNCHECK_PLUGIN")}

p = subprocess.run(["bash", script, "--help"], capture_output=True, text=True, env=env)
expect(p.returncode == 0, p)
expect(p.stdout.startswith("Runs every fuzz target") and "set -uo" not in p.stdout, p.stdout)
expect(p.stdout.rstrip().endswith("($ATTNCHECK_REGRESSION_DIR)"), p.stdout[-200:])

empty = os.path.join(work, "empty-build")
os.makedirs(empty)
p = subprocess.run(["bash", script, "--build", empty, "--work", os.path.join(work, "w0")], capture_output=True,
                   text=True, env=env)
expect(p.returncode == 2 and "no fuzz target" in p.stderr, p)

# A build folder of stand-ins: -help=1 says Usage:, -merge=1 succeeds, a run
# prints libFuzzer's fork-mode status line and ends after 1.2 s.
build = os.path.join(work, "build")
os.makedirs(os.path.join(build, "fuzz"))
fake = """#!/bin/sh
case "$*" in
  *-help=1*) echo "Usage:"; exit 0 ;;
  *-merge=1*) exit 0 ;;
esac
echo "#1234: cov: 56 ft: 78 corp: 9 exec/s 100 oom/timeout/crash: 0/0/0 time: 1s" >&2
sleep 1.2
"""
# One target is enough to see the line (the others are listed "not built"), and keeps the test short.
for t in ("fuzz_differential",):
    path = os.path.join(build, "fuzz", t)
    with open(path, "w") as f:
        f.write(fake)
    os.chmod(path, stat.S_IRWXU)

args = ["bash", script, "--build", build, "--hours", "0.001", "--jobs", "1", "--work", os.path.join(work, "w1")]
code, text = run_on_pty("/bin/bash", args, env, idle_seconds=120)
expect(code == 0, text)
expect("\r\x1b[K[1/4] fuzz_differential: " in text and "fuzz_gradients: not built" in text and "#1234: cov: 56" in text, repr(text[-1500:]))
expect("== overnight summary" in text, text)

p = subprocess.run(args[:-1] + [os.path.join(work, "w2")], capture_output=True, text=True, env=env)
expect(p.returncode == 0, p)
expect("\x1b[K" not in p.stdout + p.stderr and "fuzz_differential: 1234 execs" in p.stdout, p)
print("overnight.sh: --help clean, nothing built is exit 2, progress on a terminal only")
