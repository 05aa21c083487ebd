#!/usr/bin/python3
"""readme_plugin_example: the README's "Check your own C kernel" works as written (issue #34).

Usage: readme_plugin_example.py ATTNCHECK_BIN C_COMPILER REPO_ROOT

Takes the section's C block as my_attention.c and its two commands, runs the `cc` line
(with the build's C compiler for `cc`) in a scratch folder that links `include` to the
repository's, then the `build/attncheck check` line with ATTNCHECK_BIN for
`build/attncheck`, plus `--seed 1 --cases 25` so the run is repeatable and short. It must
build, pass (exit 0, verdict pass) and have judged cases: a newcomer who copies the section
gets a checked kernel.
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from expect import expect  # noqa: E402

binary, compiler, root = (os.path.abspath(sys.argv[1]), sys.argv[2], os.path.abspath(sys.argv[3]))
readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
start = readme.find("## Check your own C kernel")
expect(start >= 0, "README.md has no '## Check your own C kernel' section")
section = readme[start:readme.find("\n## ", start + 1)]
c_blocks = re.findall(r"```c\n(.*?)```", section, re.S)
sh_blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
expect(len(c_blocks) == 1, f"the section has {len(c_blocks)} C blocks; one, the plugin")
expect(len(sh_blocks) == 1, f"the section has {len(sh_blocks)} sh blocks; one, the commands")
commands = [line for line in sh_blocks[0].split("\n") if line.strip() and not line.startswith("#")]
build = next((c for c in commands if c.startswith("cc ")), None)
check = next((c for c in commands if c.startswith("build/attncheck check")), None)
expect(build is not None, f"no `cc` line among {commands}")
expect(check is not None, f"no `build/attncheck check` line among {commands}")

with tempfile.TemporaryDirectory() as work:
    os.symlink(os.path.join(root, "include"), os.path.join(work, "include"))
    with open(os.path.join(work, "my_attention.c"), "w", encoding="utf-8") as f:
        f.write(c_blocks[0])
    argv = shlex.split(build)
    built = subprocess.run([compiler] + argv[1:], cwd=work, capture_output=True, text=True)
    expect(built.returncode == 0, f"{build} failed:\n{built.stdout}{built.stderr}")
    argv = shlex.split(check)
    run = subprocess.run([binary] + argv[1:] + ["--seed", "1", "--cases", "25"], cwd=work,
                         capture_output=True, text=True, env=dict(os.environ, CI="true"))
    out = run.stdout + run.stderr
    expect(run.returncode == 0, f"{check} exited {run.returncode}:\n{out}")
    expect("verdict: pass" in out, f"no 'verdict: pass' in:\n{out}")
    judged = re.search(r"laws passed on (\d+) judged cases", out)
    expect(judged is not None and int(judged.group(1)) > 0, f"no judged cases in:\n{out}")
print(f"readme_plugin_example: the README's plugin builds and passes ({judged.group(0)})")
