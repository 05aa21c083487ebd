#!/usr/bin/python3
"""End to end: `attncheck check --shard INDEX/COUNT` over every shard, joined by
`attncheck merge`, gives one unsharded run's report in every format, and bad
shard values, environments and merges are refused (issue #34, "Past one machine";
docs/ci.md). Standard library only; run with Debian's /usr/bin/python3.

Usage: shard_cli.py ATTNCHECK SCENARIO TEST_PLUGIN_DIR WORKDIR
Scenarios:
  same-report  a reference, two zoo members and two faulty plugins (a crash
               charged across laws, a declared feature refused), N = 2, 3; a
               few laws with N = 1 and N above the item count; the embedded default with
               most laws skipped, N = 5; a passing run, N = 3
  environment  GoogleTest's and Bazel's variables give the flag's shards; the
               flag wins; Bazel's status file is touched
  replay       replay --shard i/3 over the regression cases: each file in one
               shard, with the verdict one replay gives it
  refusals     bad --shard values and variables (exit 2, named); merges of a
               damaged file, a missing or doubled shard, different runs, a report
               that is no shard's (exit 2, named)

What the comparison leaves out, and why (each is the run's, not its verdict's):
  JSON "seconds" (a law's and an implementation's wall time), "wall_seconds"
  (the run's: the merge keeps the longest shard's) and "timestamp" (when the
  run started: the merge keeps the earliest shard's); JUnit's time= and
  timestamp= attributes (the same); the Markdown header's timestamp and wall time; on
  the console, what check prints while it runs (seed, rerun command, the
  "checking ... (N s)" lines: before the first empty line) and the report
  files' paths in "wrote ... report to PATH".
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from expect import expect  # noqa: E402  (not assert: python -O strips asserts)

attncheck, scenario, test_plugin_dir, work = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
SHARD_VARS = ("GTEST_SHARD_INDEX", "GTEST_TOTAL_SHARDS", "TEST_SHARD_INDEX", "TEST_TOTAL_SHARDS",
              "TEST_SHARD_STATUS_FILE")
ENV = {k: v for k, v in os.environ.items() if k not in ("CI", "NO_COLOR", "ATTNCHECK_SEED") + SHARD_VARS}
FORMATS = {"json": ".json", "junit": ".xml", "markdown": ".md"}


def run(args, expect_rc, env=None):
    p = subprocess.run([attncheck] + args, capture_output=True, text=True, timeout=600, env=env or ENV)
    if p.returncode != expect_rc:
        sys.exit(f"attncheck {' '.join(args)}: exit {p.returncode}, expected {expect_rc}\n"
                 f"{p.stdout[-4000:]}\n{p.stderr[-3000:]}")
    return p


def report_flags(stem):
    flags = []
    for fmt, ext in FORMATS.items():
        flags += ["--" + fmt, stem + ext]
    return flags


def without_run_fields(value):
    if isinstance(value, dict):
        return {k: without_run_fields(v) for k, v in value.items() if k not in ("seconds", "wall_seconds", "timestamp")}
    if isinstance(value, list):
        return [without_run_fields(v) for v in value]
    return value


def comparable(stem, stdout):
    """Every format of one report, less the fields the module docstring names."""
    j = without_run_fields(json.load(open(stem + ".json")))
    j.pop("shard", None)
    xml = re.sub(r' (time|timestamp)="[^"]*"', "", open(stem + ".xml").read())
    md = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d UTC(, [\d.]+ s \(wall time\))?", "TIME UTC",
                open(stem + ".md").read())
    console = stdout[stdout.index("\n\n") + 2:]
    console = re.sub(r"(wrote \S+ report to ).*", r"\1PATH", console)
    return {"json": j, "junit": xml, "markdown": md, "console": console}


def check_sharded_equals_whole(name, args, counts, rc):
    whole = os.path.join(work, name + "-whole")
    want = comparable(whole, run(["check"] + args + report_flags(whole), rc).stdout)
    for n in counts:
        shards = []
        for i in range(n):
            stem = os.path.join(work, f"{name}-{i}of{n}")
            # A shard's own exit status is its part's (0 or 1); the merge's is the run's.
            p = subprocess.run([attncheck, "check"] + args + ["--shard", f"{i}/{n}", "--json", stem + ".json"],
                               capture_output=True, text=True, timeout=600, env=ENV)
            expect(p.returncode in (0, 1), f"shard {i}/{n}: exit {p.returncode}\n{p.stderr[-2000:]}")
            shard = json.load(open(stem + ".json"))["shard"]
            expect(shard["index"] == i and shard["count"] == n, shard["index"])
            if not shard["ran"]:
                # An empty part still writes a valid report and claims no pass.
                expect(p.returncode == 0 and "nothing was checked here" in p.stdout, p.stdout)
                expect(json.load(open(stem + ".json"))["implementations"] == [], "an empty shard lists implementations")
            shards.append(stem + ".json")
        merged = os.path.join(work, f"{name}-merged{n}")
        got = comparable(merged, run(["merge"] + shards[::-1] + report_flags(merged), rc).stdout)
        for fmt in want:
            expect(got[fmt] == want[fmt], f"{name}, {n} shard(s): the merged {fmt} report differs from one run's:\n"
                   f"{json.dumps(want[fmt])[:3000] if fmt == 'json' else want[fmt][:3000]}\n----\n"
                   f"{json.dumps(got[fmt])[:3000] if fmt == 'json' else got[fmt][:3000]}")
        items = json.load(open(shards[0]))["shard"]["items"]
        sizes = [len(json.load(open(s))["shard"]["ran"]) for s in shards]
        expect(sum(sizes) == items and max(sizes) - min(sizes) <= 1, f"shards unbalanced or not covering: {sizes}")
    return want


if scenario == "same-report":
    crash = os.path.join(test_plugin_dir, "crash_plugin.so")
    refuse = os.path.join(test_plugin_dir, "refuse_softcap_plugin.so")
    # --profile small: what is compared is the sharding and the merge, not the draws; the
    # default profile's long rows made the whole "mixed" run the test's cost (74 s of CPU).
    common = ["--seed", "20261206", "--cases", "25", "--jobs", "2", "--timeout-ms", "300", "--profile", "small"]
    big = ["--impl", "reference", "--impl", "seed_unscaled", "--impl", "no_max_subtraction",
           "--plugin", crash, "--plugin", refuse] + common
    # N = 1 (one shard that is the whole run) is checked on the few laws below: here it would
    # cost a whole run of every law.
    want = check_sharded_equals_whole("mixed", big, [2, 3], 1)
    verdicts = {i["name"]: i["verdict"] for i in want["json"]["implementations"]}
    expect(verdicts["reference"] == "pass" and verdicts["seed_unscaled"] == "fail"
           and verdicts["no_max_subtraction"] == "fail", verdicts)
    # A few laws: 3 implementations x 3 laws = 9 items in one shard, and over 11 shards (two of
    # them empty).
    few = ["--impl", "reference", "--impl", "seed_unscaled", "--impl", "no_max_subtraction",
           "--law", "weights_sum_to_one", "--law", "matches_oracle", "--law", "default_scale_is_inverse_sqrt_d"] + common
    check_sharded_equals_whole("few", few, [1, 11], 1)
    # The embedded default (every built-in, its expectations; a zoo member's pinned opt-in
    # law) with all but three laws left out by --skip-law: skipped laws are no work items,
    # and the merge puts them back in their places.
    listed = run(["list"], 0).stdout
    laws = re.findall(r"^  ([a-z0-9_]+) ", listed[listed.index("\nlaws"):], re.M)
    expect(len(laws) > 20, f"attncheck list named {len(laws)} laws")
    skips = []
    for law in laws:
        if law not in ("weights_sum_to_one", "matches_oracle", "no_crash"):
            skips += ["--skip-law", law]
    check_sharded_equals_whole("default", ["--seed", "3", "--cases", "20", "--jobs", "2", "--profile", "small"] + skips,
                               [5], 1)
    # A run that passes merges to a pass (exit 0).
    check_sharded_equals_whole("pass", ["--impl", "reference", "--impl", "naive", "--law", "matches_oracle",
                                        "--law", "no_crash"] + common, [3], 0)

elif scenario == "environment":
    args = ["check", "--impl", "reference", "--impl", "seed_unscaled", "--law", "matches_oracle",
            "--law", "weights_sum_to_one", "--seed", "5", "--cases", "20"]

    def ran(extra, env_vars, name):
        path = os.path.join(work, name + ".json")
        p = subprocess.run([attncheck] + args + extra + ["--json", path], capture_output=True, text=True,
                           timeout=600, env=dict(ENV, **env_vars))
        expect(p.returncode in (0, 1), f"{name}: exit {p.returncode}\n{p.stderr[-2000:]}")
        shard = json.load(open(path))["shard"]
        return shard["index"], shard["count"], [(r["implementation"], r["law"]) for r in shard["ran"]]

    flag = ran(["--shard", "1/3"], {}, "flag")
    expect(flag[:2] == (1, 3) and flag[2], flag)
    expect(ran([], {"GTEST_SHARD_INDEX": "1", "GTEST_TOTAL_SHARDS": "3"}, "gtest") == flag, "GTEST_* differ from --shard")
    status = os.path.join(work, "bazel-status")
    expect(ran([], {"TEST_SHARD_INDEX": "1", "TEST_TOTAL_SHARDS": "3", "TEST_SHARD_STATUS_FILE": status}, "bazel")
           == flag, "TEST_* differ from --shard")
    expect(os.path.exists(status), "TEST_SHARD_STATUS_FILE was not touched")
    # The flag wins over the environment.
    expect(ran(["--shard", "1/3"], {"GTEST_SHARD_INDEX": "0", "GTEST_TOTAL_SHARDS": "2"}, "wins") == flag,
           "--shard did not win over GTEST_*")
    # Without either, no shard: the report has no "shard" object.
    path = os.path.join(work, "none.json")
    subprocess.run([attncheck] + args + ["--json", path], capture_output=True, timeout=600, env=ENV)
    expect("shard" not in json.load(open(path)), "an unsharded run wrote a shard object")

elif scenario == "replay":
    # The regression cases of built-ins (a plugin's, libtorch's say, may not be built here).
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "regression", "cases")
    cases = os.path.join(work, "cases")
    os.makedirs(cases)
    for name in sorted(os.listdir(source)):
        if name.endswith(".json") and json.load(open(os.path.join(source, name)))["history"]["source"].startswith("builtin:"):
            shutil.copy(os.path.join(source, name), cases)

    def replayed(extra, name):
        path = os.path.join(work, name + ".json")
        p = subprocess.run([attncheck, "replay", cases, "--json", path] + extra, capture_output=True, text=True,
                           timeout=600, env=ENV)
        expect(p.returncode in (0, 1), f"replay {extra}: exit {p.returncode}\n{p.stderr[-2000:]}")
        got = {}
        for i in json.load(open(path))["implementations"]:
            for law in i["laws"]:
                got[law["replayed"]] = (i["name"], law["law"], law["status"], law.get("message"))
        return p.returncode, got

    rc, whole = replayed([], "whole")
    expect(len(whole) > 3, f"too few regression cases: {len(whole)}")
    parts = [replayed(["--shard", f"{i}/3"], f"part{i}")[1] for i in range(3)]
    expect(sorted(len(p) for p in parts)[-1] - sorted(len(p) for p in parts)[0] <= 1, [len(p) for p in parts])
    joined = {}
    for part in parts:
        expect(not set(part) & set(joined), "a case file was replayed by two shards")
        joined.update(part)
    expect(joined == whole, "the shards' replays differ from one replay")
    p = subprocess.run([attncheck, "replay", cases, "--shard", "3/3"], capture_output=True, text=True, env=ENV)
    expect(p.returncode == 2 and "--shard" in p.stderr, p.stderr)
    # More shards than files: an empty part replays nothing, says so and passes nothing.
    md = os.path.join(work, "empty.md")
    p = subprocess.run([attncheck, "replay", cases, "--shard", f"{len(whole) + 1}/{len(whole) + 2}", "--markdown", md],
                       capture_output=True, text=True, env=ENV)
    expect(p.returncode == 0 and "nothing is replayed here" in p.stdout, p.stdout + p.stderr)
    expect("pass" not in open(md).read().splitlines()[0], open(md).read())

elif scenario == "refusals":
    base = ["check", "--impl", "reference", "--law", "matches_oracle", "--seed", "5", "--cases", "20"]
    for bad in ("1/", "3/3", "0/0", "a/b", "-1/2", "1", "/2", "1/2/3", " 1/2", "0/100001"):
        p = run(base + ["--shard", bad], 2)
        expect("--shard" in p.stderr and bad.strip() in p.stderr, (bad, p.stderr))
    for env_vars, named in (({"GTEST_SHARD_INDEX": "2", "GTEST_TOTAL_SHARDS": "2"}, "GTEST_SHARD_INDEX"),
                            ({"GTEST_SHARD_INDEX": "x", "GTEST_TOTAL_SHARDS": "2"}, "GTEST_SHARD_INDEX=x"),
                            ({"GTEST_TOTAL_SHARDS": "0", "GTEST_SHARD_INDEX": "0"}, "GTEST_TOTAL_SHARDS"),
                            ({"TEST_SHARD_INDEX": "1"}, "TEST_TOTAL_SHARDS"),
                            ({"GTEST_SHARD_INDEX": "0", "GTEST_TOTAL_SHARDS": "2", "TEST_SHARD_INDEX": "1",
                              "TEST_TOTAL_SHARDS": "2"}, "disagree")):
        p = run(base, 2, dict(ENV, **env_vars))
        expect(named in p.stderr, (env_vars, p.stderr))

    def shard(i, n, seed="5", laws=("matches_oracle", "weights_sum_to_one")):
        path = os.path.join(work, f"s{i}of{n}-{seed}-{len(laws)}.json")
        a = ["check", "--impl", "reference", "--seed", seed, "--cases", "20", "--shard", f"{i}/{n}", "--json", path]
        for law in laws:
            a += ["--law", law]
        run(a, 0)
        return path

    s0, s1, s2 = shard(0, 3), shard(1, 3), shard(2, 3)
    p = run(["merge", s0, s2], 2)
    expect("missing shard(s) 1/3" in p.stderr, p.stderr)
    p = run(["merge", s0, s1, s1, s2], 2)
    expect("shard 1/3 is given twice" in p.stderr, p.stderr)
    p = run(["merge", s0, s1, shard(2, 3, seed="6")], 2)
    expect("different runs" in p.stderr and "seed" in p.stderr, p.stderr)
    p = run(["merge", s0, s1, shard(2, 3, laws=("matches_oracle",))], 2)
    expect("different runs" in p.stderr, p.stderr)
    p = run(["merge", s0, shard(1, 2)], 2)
    expect("different runs" in p.stderr and "shard count" in p.stderr, p.stderr)
    whole = os.path.join(work, "whole.json")
    run(["check", "--impl", "reference", "--law", "matches_oracle", "--seed", "5", "--cases", "20", "--json", whole], 0)
    p = run(["merge", whole], 2)
    expect(whole in p.stderr and "not a shard's report" in p.stderr, p.stderr)
    damaged = os.path.join(work, "damaged.json")
    open(damaged, "w").write(open(s1).read()[:-200])
    p = run(["merge", s0, damaged, s2], 2)
    expect(damaged in p.stderr and "not JSON" in p.stderr, p.stderr)
    edited = json.load(open(s1))
    edited["implementations"][0]["laws"][0]["status"] = "passed"
    json.dump(edited, open(damaged, "w"))
    p = run(["merge", s0, damaged, s2], 2)
    expect(damaged in p.stderr and "status" in p.stderr and "passed" in p.stderr, p.stderr)
    edited = json.load(open(s1))
    edited["shard"]["ran"][0]["result"] = edited["shard"]["ran"][0]["result"][:-2]
    json.dump(edited, open(damaged, "w"))
    p = run(["merge", s0, damaged, s2], 2)
    expect(damaged in p.stderr and "does not decode" in p.stderr, p.stderr)
    p = run(["merge", s0, s1, s2, "--json", s1], 2)
    expect("both a shard's report and the merge's output" in p.stderr, p.stderr)
    run(["merge", s0, s1, s2], 0)
else:
    sys.exit(f"unknown scenario {scenario}")
print(f"shard_cli {scenario}: ok")
