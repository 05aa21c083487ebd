#!/usr/bin/env python3
"""The fuzz targets at check's shapes (ATTNCHECK_FUZZ_PROFILE, ATTNCHECK_FUZZ_SHAPES; fuzz/README.md).

usage: profile_shapes_test.py SCENARIO BUILD_FUZZ_DIR PLUGIN WORK_DIR
  refused      a bad profile, flag, range or cap, or a profile beside the caps: each target that
               draws problems exits 2 before running any input, with a message naming the variable
               and the bad value
  fast-path    tests/plugins/fast128_tail_plugin.c (right except on its head_dim-128 fast path) over
               one deterministic corpus of random inputs, every law on each (ATTNCHECK_FUZZ_ALL),
               through the replay main: passes at the default caps (head_dim <= 6 never reaches the
               fast path), and with the decode profile a law fails, on a case file whose shape the
               profile allows, head_dim 128
  overnight    fuzz/overnight.sh with a profile: a bad one ends it before the night (exit 2, the
               target's message); a good one gives each target a corpus folder of its own
               (<target>@decode_head_dim_128), inputs up to 65536 bytes, and leaves fuzz_case_file out
               (stand-in targets that record their arguments, as tests/cli/overnight_cli.py has)
"""
import json
import os
import random
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "support"))
from expect import expect  # noqa: E402

SHAPE_VARS = ["ATTNCHECK_FUZZ_PROFILE", "ATTNCHECK_FUZZ_SHAPES", "ATTNCHECK_FUZZ_MAX_BATCH",
              "ATTNCHECK_FUZZ_MAX_HEADS", "ATTNCHECK_FUZZ_MAX_LEN", "ATTNCHECK_FUZZ_MAX_DIM",
              "ATTNCHECK_FUZZ_LAWS", "ATTNCHECK_FUZZ_SKIP_LAWS", "ATTNCHECK_FUZZ_ALL"]


def run(binary, inputs, extra_env, plugin, regressions):
    env = {k: v for k, v in os.environ.items() if k not in SHAPE_VARS}
    env.update({"ATTNCHECK_PLUGIN": plugin, "ATTNCHECK_REGRESSION_DIR": regressions,
                "ATTNCHECK_PLUGIN_TIMEOUT_MS": "20000"})
    env.update(extra_env)
    return subprocess.run([binary, inputs], env=env, capture_output=True, text=True, timeout=600)


def refused(build, plugin, work):
    corpus = os.path.join(work, "one-input")
    os.makedirs(corpus, exist_ok=True)
    with open(os.path.join(corpus, "zeros"), "wb") as f:
        f.write(bytes(64))
    bad = [
        ({"ATTNCHECK_FUZZ_PROFILE": "kernel"}, ["ATTNCHECK_FUZZ_PROFILE='kernel'", "choose", "decode"]),
        ({"ATTNCHECK_FUZZ_SHAPES": "--head-dim 0"}, ["ATTNCHECK_FUZZ_SHAPES='--head-dim 0'", "--head-dim '0'"]),
        ({"ATTNCHECK_FUZZ_PROFILE": "decode", "ATTNCHECK_FUZZ_SHAPES": "--kv-len 64..8"},
         ["ATTNCHECK_FUZZ_SHAPES='--kv-len 64..8'", "--kv-len '64..8'"]),
        ({"ATTNCHECK_FUZZ_SHAPES": "--head_dim=128"}, ["'--head_dim=128' is not a shape flag"]),
        ({"ATTNCHECK_FUZZ_SHAPES": "--profile decode --kv-len"}, ["--kv-len needs a value"]),
        ({"ATTNCHECK_FUZZ_SHAPES": "--profile=prefil"}, ["--profile 'prefil'", "choose"]),
        ({"ATTNCHECK_FUZZ_PROFILE": "decode", "ATTNCHECK_FUZZ_SHAPES": "--profile small"},
         ["ATTNCHECK_FUZZ_PROFILE='decode'", "--profile small", "give the profile once"]),
        ({"ATTNCHECK_FUZZ_PROFILE": "decode", "ATTNCHECK_FUZZ_MAX_LEN": "4096"},
         ["ATTNCHECK_FUZZ_MAX_LEN beside ATTNCHECK_FUZZ_PROFILE", "--kv-len"]),
        ({"ATTNCHECK_FUZZ_MAX_DIM": "128x"}, ["ATTNCHECK_FUZZ_MAX_DIM='128x'", "whole number"]),
        ({"ATTNCHECK_FUZZ_MAX_LEN": "0"}, ["ATTNCHECK_FUZZ_MAX_LEN='0'"]),
    ]
    for target in ["fuzz_plugin", "fuzz_differential", "fuzz_overflow", "fuzz_gradients"]:
        binary = os.path.join(build, target)
        for env, words in bad:
            p = run(binary, corpus, env, plugin, os.path.join(work, "regressions-refused"))
            said = f"{target} {env}: exit {p.returncode}, stderr {p.stderr[-600:]!r}"
            expect(p.returncode == 2, said)
            for w in words:
                expect(w in p.stderr, f"{said}: {w!r} not in the message")
            expect("running " not in p.stderr and "ran " not in p.stdout, f"{said}: an input ran")
    # A good profile is said, and runs (the same input, exit 0).
    p = run(os.path.join(build, "fuzz_differential"), corpus,
            {"ATTNCHECK_FUZZ_PROFILE": "decode", "ATTNCHECK_FUZZ_SHAPES": "--head-dim=128 --kv-len 1..40"},
            plugin, os.path.join(work, "regressions-refused"))
    expect(p.returncode == 0, f"a good profile: exit {p.returncode}, {p.stderr[-600:]!r}")
    expect("shapes of attncheck check --profile decode --head-dim 128 --kv-len 1..40" in p.stderr, p.stderr[-600:])
    print("refused: every bad value named, exit 2 before any input; a good one announced")


def fast_path(build, plugin, work):
    # One corpus for both runs: random inputs of 16 KiB (bytes for q, k and v at
    # head_dim 128 and a few dozen keys), the same every time. About 2% of them
    # draw head_dim 128 in f32 or f64 (decode: a kernel head dim in 35% of the
    # cases, one of 8; the plugin takes 2 of the 4 dtypes) and most of those show
    # the fault to some law (7 in the first 400 when measured): 1,500 leave no room for luck.
    count = 1500
    corpus = os.path.join(work, "corpus")
    shutil.rmtree(corpus, ignore_errors=True)
    os.makedirs(corpus)
    r = random.Random(20261206)
    for n in range(count):
        with open(os.path.join(corpus, f"input-{n:04d}"), "wb") as f:
            f.write(r.randbytes(16384))
    binary = os.path.join(build, "fuzz_plugin")
    laws = {"ATTNCHECK_FUZZ_ALL": "1"}  # every law on every input

    caps_dir = os.path.join(work, "regressions-caps")
    shutil.rmtree(caps_dir, ignore_errors=True)
    p = run(binary, corpus, laws, plugin, caps_dir)
    expect(p.returncode == 0 and f"ran {count} input(s)" in p.stdout,
           f"at the default caps: exit {p.returncode}, {p.stdout[-300:]!r} {p.stderr[-1500:]!r}")
    expect(not os.path.isdir(caps_dir) or not os.listdir(caps_dir), f"a case file at the default caps: {caps_dir}")

    profile_dir = os.path.join(work, "regressions-decode")
    shutil.rmtree(profile_dir, ignore_errors=True)
    p = run(binary, corpus, dict(laws, ATTNCHECK_FUZZ_PROFILE="decode", ATTNCHECK_FUZZ_SHAPES="--kv-len 1..40"),
            plugin, profile_dir)
    expect(p.returncode != 0 and " fails for fast128_tail_plugin" in p.stderr,
           f"with the decode profile: exit {p.returncode}, {p.stderr[-1500:]!r}")
    cases = [os.path.join(profile_dir, f) for f in os.listdir(profile_dir) if f.endswith(".json")]
    expect(len(cases) == 1, f"case files: {cases}")
    with open(cases[0]) as f:
        case = json.load(f)
    problem = case["problem"]
    shape = {k: problem[k] for k in ["batch", "heads", "q_len", "kv_len", "head_dim", "value_dim"]}
    # The decode profile's shapes (src/gen/profiles.cpp), kv_len narrowed by --kv-len 1..40
    # (value_dim not checked: a weights law's call reads the weights through V = identity).
    expect(shape["head_dim"] == 128, f"the fault is on the head_dim-128 path: {shape}")
    expect(1 <= shape["q_len"] <= 8 and 1 <= shape["kv_len"] <= 40, f"outside decode, --kv-len 1..40: {shape}")
    expect(shape["kv_len"] % 16 != 0, f"the fast path drops kv_len % 16 keys, here none: {shape}")
    expect(shape["batch"] <= 2 and shape["heads"] <= 2, f"outside decode's batch and heads: {shape}")
    ran = p.stderr.count("running ")
    print(f"fast-path: passes {count} inputs at the default caps; with the decode profile {case['law']} fails at "
          f"input {ran}: {shape}")
    shutil.rmtree(corpus)  # 24 MB


def overnight(build, plugin, work):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "overnight.sh")
    env = {k: v for k, v in os.environ.items() if k not in SHAPE_VARS + ["CI", "ATTNCHECK_PLUGIN"]}
    # The real targets refuse a bad profile; overnight.sh stops before any run.
    p = subprocess.run(["bash", script, "--build", os.path.dirname(build), "--hours", "0.001", "--work",
                        os.path.join(work, "bad")], env=dict(env, ATTNCHECK_FUZZ_PROFILE="kernel"),
                       capture_output=True, text=True, timeout=120)
    expect(p.returncode == 2 and "ATTNCHECK_FUZZ_PROFILE='kernel'" in p.stderr and "overnight summary" not in p.stdout,
           f"exit {p.returncode}: {p.stdout[-500:]!r} {p.stderr[-500:]!r}")
    # Stand-ins: -help=1 says Usage:, -merge=1 succeeds, a run records its arguments.
    fake_build = os.path.join(work, "build")
    os.makedirs(os.path.join(fake_build, "fuzz"), exist_ok=True)
    args_file = os.path.join(work, "args")
    for t in ("fuzz_differential", "fuzz_case_file"):
        path = os.path.join(fake_build, "fuzz", t)
        with open(path, "w") as f:
            f.write('#!/bin/sh\ncase "$*" in *-help=1*) echo "Usage:"; exit 0 ;; *-merge=1*|*-runs=0*) exit 0 ;; esac\n'
                    f'echo "{t} $*" >> {args_file}\n')
        os.chmod(path, 0o755)
    shutil.rmtree(os.path.join(work, "w"), ignore_errors=True)
    p = subprocess.run(["bash", script, "--build", fake_build, "--hours", "0.001", "--jobs", "1", "--work",
                        os.path.join(work, "w")],
                       env=dict(env, ATTNCHECK_FUZZ_PROFILE="decode", ATTNCHECK_FUZZ_SHAPES="--head-dim 128"),
                       capture_output=True, text=True, timeout=120)
    expect(p.returncode == 0, f"exit {p.returncode}: {p.stdout[-800:]!r} {p.stderr[-500:]!r}")
    with open(args_file) as f:
        runs = f.read().splitlines()
    # overnight.sh restarts a target that ends before its time is up, and the stand-in ends at
    # once: as many runs as fit in the 3.6 s, each of fuzz_differential with the same arguments.
    expect(runs and all(r == runs[0] for r in runs) and runs[0].startswith("fuzz_differential "), f"runs: {runs}")
    words = runs[0].split()
    expect(words.index("-max_len=65536") > words.index("-max_len=4096"), f"the longer inputs must win: {words}")
    expect(words[-1] == os.path.join(work, "w", "fuzz_differential@decode_head_dim_128", "corpus"), f"corpus: {words}")
    expect("fuzz_case_file" not in p.stdout, p.stdout[-800:])
    print(f"overnight: a bad profile stops it (exit 2); with one: {words[-1]}, -max_len=65536, no fuzz_case_file")


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    scenario, build, plugin, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    {"refused": refused, "fast-path": fast_path, "overnight": overnight}[scenario](build, plugin, os.path.join(work, scenario))


if __name__ == "__main__":
    main()
