#!/usr/bin/env python3
"""End-to-end checks of issue #30's isolation and time limits, through the
program as CI runs it:

  busy-machine    a correct plugin that needs 100 ms of CPU a call passes with
                  a 400 ms limit on one core beside six CPU-bound processes (the
                  wall-clock limit of old failed it on no_timeout);
  two-plugins     a plugin that scribbles into every shared call region it can
                  find in its own memory does not fail another plugin checked
                  in the same run;
  daemon-outlives a plugin that starts a daemon and kills its own supervisor
                  leaves nothing running once attncheck has exited.

Run by CTest with Debian's /usr/bin/python3 (the interpreter CMake found).
Usage: isolation_cli.py ATTNCHECK SCENARIO TEST_PLUGIN_DIR WORKDIR
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

attncheck, scenario, test_plugin_dir, work = sys.argv[1:5]
work = os.path.join(work, scenario)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
json_path = os.path.join(work, "report.json")
isolation_plugin = os.path.join(test_plugin_dir, "isolation_plugin.so")


def expect(condition, message):
    if not condition:
        sys.exit(f"{scenario}: {message}")


def run(args, env=None, timeout=600):
    p = subprocess.run([attncheck] + args, capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, **(env or {})))
    return p


def laws_of(report, k=0):
    return {l["law"]: l for l in report["implementations"][k]["laws"]}


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


if scenario == "busy-machine":
    # One core, made busy: this process and everything it starts (the spinners, attncheck, its
    # plugin hosts) run on the first core it may use, six spinners beside the plugin, so the
    # plugin gets about a seventh of that core. The other cores stay free for the tests beside
    # this one (16 spinners on both cores had stalled them for half a minute).
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    spinners = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(6)]
    try:
        start = time.monotonic()
        # --profile small: the plugin's own arithmetic stays well below its burn
        # (under a sanitizer too), so each call needs about 100 ms of CPU, a quarter of
        # the 400 ms limit; on a seventh of a core that is about 700 ms by the clock,
        # which a wall-clock limit of 400 ms failed.
        # The probes' calls (one batch, one head) are not slowed: the time goes to the law.
        burn = {"ATTNCHECK_TEST_ISOLATION": "burn", "ATTNCHECK_TEST_BURN_MS": "100",
                "ATTNCHECK_TEST_BURN_BATCHED_ONLY": "1"}
        p = run(["check", "--plugin", isolation_plugin, "--law", "no_timeout",
                 "--profile", "small", "--dtype", "f64", "--cases", "20", "--seed", "20261130", "--timeout-ms", "400",
                 "--jobs", "1", "--json", json_path], env=burn)
        seconds = time.monotonic() - start
        # The same check with a wall-clock limit as short as the CPU one (what
        # the limit was before): the load must be enough to fail it, or this
        # scenario shows nothing. Its failing case is hardly shrunk (every step would time out too).
        clock = run(["check", "--plugin", isolation_plugin, "--law", "no_timeout", "--profile", "small",
                     "--dtype", "f64", "--cases", "20", "--seed", "20261130", "--timeout-ms", "400",
                     "--wall-timeout-ms", "400", "--jobs", "1", "--shrink-seconds", "0.5"], env=burn)
    finally:
        for s in spinners:
            s.kill()
            s.wait()
    expect(p.returncode == 0, f"exit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-2000:]}")
    laws = laws_of(json.load(open(json_path)))
    expect(laws["no_timeout"]["status"] == "pass" and laws["no_timeout"]["judged"] >= 20, laws["no_timeout"])
    expect(clock.returncode == 1 and "of wall-clock time" in clock.stdout,
           f"a wall-clock limit of 400 ms did not fail on the busy machine (exit {clock.returncode}): "
           f"the machine was not busy enough for this test to show anything\n{clock.stdout[-2000:]}")
    print(f"busy machine: {seconds:.1f} s, every verdict as on an idle machine "
          "(a wall-clock limit as short as the CPU one failed)")
elif scenario == "two-plugins":
    # --jobs 1: both hosts are forks of the one checker process, the scribbler's
    # started while the first plugin's region exists (its probes made it).
    env = {"ATTNCHECK_TEST_ISOLATION": ""}
    p = run(["check", "--plugin", "good=" + isolation_plugin, "--plugin",
             "scribbler=" + os.path.join(test_plugin_dir, "scribble_plugin.so"),
             "--law", "matches_oracle", "--law", "no_out_of_bounds_write", "--dtype", "f64", "--cases", "30",
             "--seed", "20261130", "--jobs", "1", "--json", json_path], env=env)
    report = json.load(open(json_path))
    impls = {i["name"]: i for i in report["implementations"]}
    good = {l["law"]: l for l in impls["good"]["laws"]}
    expect(impls["good"]["verdict"] == "pass", f"the correct plugin was harmed: {good}")
    print("two plugins: the correct one passes beside the scribbler")
elif scenario == "daemon-outlives":
    pid_file = os.path.join(work, "daemon.pid")
    p = run(["check", "--plugin", isolation_plugin, "--law", "matches_oracle", "--dtype", "f64", "--cases", "5",
             "--seed", "1", "--jobs", "1"],
            env={"ATTNCHECK_TEST_ISOLATION": "kill_supervisor", "ATTNCHECK_TEST_PID_FILE": pid_file})
    expect(p.returncode in (0, 1), f"exit {p.returncode}\n{p.stderr[-2000:]}")
    expect(os.path.exists(pid_file), "the plugin never started its daemon: the test shows nothing")
    # Every host the run (re)started killed its supervisor and left a daemon.
    daemons = [int(line) for line in open(pid_file).read().split()]
    deadline = time.monotonic() + 5
    while any(alive(d) for d in daemons) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [d for d in daemons if alive(d)]
    for d in left:
        os.kill(d, signal.SIGKILL)
    expect(not left, f"{len(left)} of the plugin's {len(daemons)} daemons outlived attncheck: {left}")
    print(f"daemons: all {len(daemons)} ended with the run")
else:
    sys.exit(f"unknown scenario {scenario}")
