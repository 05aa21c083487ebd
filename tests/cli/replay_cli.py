#!/usr/bin/python3
"""End-to-end checks of `attncheck replay` as a user meets it (issue #34): a case
saved with a relative plugin path, replayed from elsewhere; a timeout's reproduce
line run as printed. Standard library only; run with Debian's /usr/bin/python3.

Usage: replay_cli.py ATTNCHECK SCENARIO PLUGIN_DIR TEST_PLUGIN_DIR WORKDIR
Scenarios:
  relative-plugin    a case recording "plugin:sub/libseed_layer.so" (check was run
                     from a folder with --plugin sub/...): replayed from another
                     folder it is refused naming both paths tried and --plugin PATH;
                     that suggestion works; the plugin beside the case file is found.
  timeout-reproduce  a slow but correct plugin (isolation_plugin.so burning 700 ms of
                     CPU per call) times out under --timeout-ms 300: replay's reproduce
                     line, run as printed, times out again (it must carry --timeout-ms;
                     under the default 2000 ms the call answers and the case passes).
"""
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from expect import expect  # noqa: E402  (not assert: python -O strips asserts)

attncheck, plugin_dir, test_plugin_dir, work = (os.path.abspath(a) for a in (sys.argv[1], *sys.argv[3:6]))
scenario = sys.argv[2]
work = os.path.join(work, scenario)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
ENV = {k: v for k, v in os.environ.items() if k not in ("CI", "NO_COLOR", "ATTNCHECK_SEED")}


def run(args, expect_rc, cwd=work, env=None):
    p = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env or ENV, cwd=cwd)
    expect(p.returncode == expect_rc, f"{' '.join(args)}: exit {p.returncode}, expected {expect_rc}\n"
                                      f"{p.stdout[-4000:]}\n{p.stderr[-2000:]}")
    return p


def only_case(folder):
    found = glob.glob(os.path.join(folder, "*.json"))
    expect(len(found) == 1, f"expected one case file in {folder}, found {found}")
    return found[0]


if scenario == "relative-plugin":
    project = os.path.join(work, "project")
    os.makedirs(os.path.join(project, "sub"))
    shutil.copy(os.path.join(plugin_dir, "libseed_layer.so"), os.path.join(project, "sub"))
    run([attncheck, "check", "--plugin", "sub/libseed_layer.so", "--law", "query_sensitivity", "--seed", "3",
         "--cases", "30", "--save-failures", "cases"], 1, cwd=project)
    case = only_case(os.path.join(project, "cases"))
    with open(case) as f:
        expect(json.load(f)["history"]["source"] == "plugin:sub/libseed_layer.so", "the source is recorded as given")
    elsewhere = os.path.join(work, "elsewhere")
    os.makedirs(elsewhere)
    p = run([attncheck, "replay", case], 2, cwd=elsewhere)
    for words in (os.path.join(elsewhere, "sub", "libseed_layer.so") + " (from the working folder)",
                  os.path.join(project, "cases", "sub", "libseed_layer.so") + " (from the case file's folder)",
                  "--plugin PATH", f"attncheck replay {case} --plugin PATH"):
        expect(words in p.stderr, f"the refusal names {words!r}:\n{p.stderr}")
    # The suggestion, followed, replays the case: it fails again.
    p = run([attncheck, "replay", case, "--plugin", os.path.join(project, "sub", "libseed_layer.so")], 1, cwd=elsewhere)
    expect("FAIL  " in p.stdout and "query_sensitivity" in p.stdout, p.stdout)
    # From the project folder, as recorded.
    run([attncheck, "replay", case], 1, cwd=project)
    # The plugin beside the case file, at the recorded relative path: found there.
    shutil.copytree(os.path.join(project, "sub"), os.path.join(project, "cases", "sub"))
    p = run([attncheck, "replay", case], 1, cwd=elsewhere)
    expect(f"plugin:{os.path.join(project, 'cases', 'sub', 'libseed_layer.so')}" in p.stdout, p.stdout)
elif scenario == "timeout-reproduce":
    # The burn spares the probes' calls (one batch x head), so only the laws' calls are slow.
    env = dict(ENV, ATTNCHECK_TEST_ISOLATION="burn", ATTNCHECK_TEST_BURN_MS="700", ATTNCHECK_TEST_BURN_BATCHED_ONLY="1")
    slow = os.path.join(test_plugin_dir, "isolation_plugin.so")
    run([attncheck, "check", "--plugin", slow, "--law", "matches_oracle", "--seed", "4", "--cases", "20",
         "--timeout-ms", "300", "--save-failures", "cases"], 1, env=env)
    case = only_case(os.path.join(work, "cases"))
    report = os.path.join(work, "replay.json")
    p = run([attncheck, "replay", case, "--plugin", slow, "--timeout-ms", "300", "--json", report], 1, env=env)
    expect("timeout: no answer within 300 ms" in p.stdout, p.stdout)
    lines = [l.strip()[len("reproduce: "):] for l in p.stdout.splitlines() if l.strip().startswith("reproduce: ")]
    expect(len(lines) == 1, f"one reproduce line under the failure:\n{p.stdout}")
    with open(report) as f:
        laws = json.load(f)["implementations"][0]["laws"]
    expect(laws[0]["reproduce"] == lines[0], f"the JSON report's reproduce {laws[0]['reproduce']!r} is the console's")
    expect("--timeout-ms 300" in lines[0], f"the reproduce line carries the time limit: {lines[0]}")
    # Run as printed, it shows the timeout again.
    again = run(shlex.split(lines[0]), 1, env=env)
    expect("timeout: no answer within 300 ms" in again.stdout, again.stdout)
else:
    sys.exit(f"unknown scenario {scenario}")
print(f"{scenario}: ok")
