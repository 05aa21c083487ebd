#!/usr/bin/env python3
"""End-to-end checks of `attncheck check` as users run it: exit status, the
JSON and JUnit files of cli.md, and the verdicts that matter.

Usage: check_reports.py ATTNCHECK SCENARIO PLUGIN_DIR TEST_PLUGIN_DIR WORKDIR
Scenarios: faulty-plugins, seed-layer, example-plugin, default-run, save-replay,
jobs-same-report, v2-zoo, v2-features-alone.
"""
import json
import os
import re
import subprocess
import sys
import xml.dom.minidom

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from expect import expect  # noqa: E402  (not assert: python -O strips asserts)

attncheck, scenario, plugin_dir, test_plugin_dir, work = sys.argv[1:6]
os.makedirs(work, exist_ok=True)
json_path = os.path.join(work, scenario + ".json")
junit_path = os.path.join(work, scenario + ".xml")


def run(args, expect_rc):
    cmd = [attncheck, "check", "--seed", "20261130", "--json", json_path, "--junit", junit_path] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != expect_rc:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}, expected {expect_rc}\n{p.stdout[-4000:]}\n{p.stderr[-2000:]}")
    report = json.load(open(json_path))
    xml.dom.minidom.parse(junit_path)  # well-formed JUnit
    expect(isinstance(report["seed"], int), "seed must be a JSON integer")
    for impl in report["implementations"]:
        for key in ("name", "source", "verdict", "laws"):
            expect(key in impl, f"implementation lacks {key}")
        expect(impl["verdict"] in ("pass", "fail"), 'impl["verdict"] in ("pass", "fail")')
        for law in impl["laws"]:
            expect(law["status"] in ("pass", "fail", "skipped", "insufficient"), law)
            expect(isinstance(law["cases"], int), 'isinstance(law["cases"], int)')
            if law["status"] == "fail":
                expect(law.get("message"), f"{impl['name']}/{law['law']} fails without a message")
    return p.stdout, report


def zoo_rows():
    """The zoo as its rows (impls/builtins.cpp) describe it, through `attncheck list`:
    name -> {"pinned": [laws that must catch it], "diagnosis": words or "", "v2": bool,
    "backward": bool, "v3": bool}. Every zoo line ends "(caught by LAW, ...; diagnosed as "WORDS")"."""
    listing = subprocess.run([attncheck, "list"], capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) < 2 or fields[1] != "zoo":
            continue
        m = re.search(r' \(caught by ([^;()]+)(?:; diagnosed as "([^"]*)")?\)$', line)
        expect(m, f"zoo member without the laws that catch it in `attncheck list`: {line}")
        rows[fields[0]] = {"pinned": m.group(1).split(", "), "diagnosis": m.group(2) or "",
                           "v2": "[ABI v2" in line, "backward": "; backward]" in line,
                           "v3": "; v3:" in line}
    expect(len(rows) >= 20, f"only {len(rows)} zoo members in `attncheck list`")
    return rows


def law(report, impl_name, law_name):
    for impl in report["implementations"]:
        if impl["name"] == impl_name:
            for l in impl["laws"]:
                if l["law"] == law_name:
                    return l
    sys.exit(f"no {impl_name}/{law_name} in the report")


if scenario == "faulty-plugins":
    plugins = ["crash", "hang", "oob", "unwritten"]
    args = []
    for p in plugins:
        args += ["--plugin", os.path.join(test_plugin_dir, p + "_plugin.so")]
    # --shrink-seconds 2: every shrink step of a hang waits out its limit and every step of a
    # crash restarts the plugin's process; what is checked here is the run going on past them.
    out, report = run(args + ["--cases", "30", "--timeout-ms", "300", "--shrink-seconds", "2"], 1)
    expected = {"crash_plugin": ("no_crash", "SIGSEGV"), "hang_plugin": ("no_timeout", "no answer"),
                "oob_plugin": ("no_out_of_bounds_write", "out"), "unwritten_plugin": ("writes_every_output", "unwritten")}
    for name, (law_name, words) in expected.items():
        l = law(report, name, law_name)
        expect(l["status"] == "fail" and words in l["message"], (name, l))
        # The run went on: the correct parts of the plugin were judged by the other laws
        # (fewer than the floor, once the fault budget stops a law calling a plugin that
        # faults on most shapes: then insufficient, never a pass on too few cases; the
        # hang plugin's first hang stops a law, which may be its first case).
        mo = law(report, name, "matches_oracle")
        expect(mo["status"] == "pass" and mo["judged"] >= 20 or mo["status"] == "insufficient", (name, mo))
        impl = next(i for i in report["implementations"] if i["name"] == name)
        expect(any(l["judged"] >= 1 and l["law"] != law_name for l in impl["laws"]), (name, impl["laws"]))
elif scenario == "seed-layer":
    out, report = run(["--plugin", os.path.join(plugin_dir, "libseed_layer.so")], 1)
    l = law(report, "seed_layer", "query_sensitivity")
    expect(l["status"] == "fail", l)
    expect("head_dim" in l["message"] and "entropy" in l["message"], l)
    expect("1/sqrt(d)" in l.get("diagnosis", ""), l)
elif scenario == "example-plugin":
    out, report = run(["--plugin", os.path.join(plugin_dir, "libexample_attention.so")], 0)
    expect(report["implementations"][0]["verdict"] == "pass", 'report["implementations"][0]["verdict"] == "pass"')
elif scenario == "default-run":
    # The embedded default at 25 cases per law (CI's smoke of the README's main
    # job; .ci/nightly runs it at its default 100). At this seed every law the
    # references pass judged all 25.
    out, report = run(["--cases", "25"], 0)
    expect(len(report["implementations"][0]["laws"]) >= 20, 'len(report["implementations"][0]["laws"]) >= 20')
    expect(law(report, "seed_unscaled", "query_sensitivity")["status"] == "fail", 'law(report, "seed_unscaled", "query_sensitivity")["status"] == "fail"')
    expect("1/sqrt(d)" in law(report, "seed_unscaled", "query_sensitivity").get("diagnosis", ""), '"1/sqrt(d)" in law(report, "seed_unscaled", "query_sensitivity").get("diagnosis", "")')
    bypass = [law(report, "seed_softmax_bypass", n)["status"] for n in ("weights_sum_to_one", "output_in_value_hull")]
    expect("fail" in bypass, bypass)
    # Every zoo member is in the run and caught, by one of the laws its row
    # pins at least (25 cases are fewer than the pins promise), and each of
    # those failures is diagnosed with the words its row gives.
    by_name = {i["name"]: i for i in report["implementations"]}
    for name, row in zoo_rows().items():
        expect(name in by_name, f"zoo member {name} is not in the embedded default")
        expect(by_name[name]["verdict"] == "fail", f"{name} was not caught: {by_name[name]['laws']}")
        failed = [law(report, name, n) for n in row["pinned"] if law(report, name, n)["status"] == "fail"]
        expect(failed, f"{name} passed every law its row pins: {row['pinned']}")
        for l in failed:
            expect(row["diagnosis"] in l.get("diagnosis", ""),
                   f"{name}/{l['law']}: diagnosis {l.get('diagnosis')!r} lacks {row['diagnosis']!r}")
    # Every law the embedded default runs is shown able to fail there: some zoo
    # member fails it (a law nothing fails could be one that cannot fail). The
    # process laws are the exception: a built-in runs in the checker's own
    # process and cannot crash, hang or scribble without taking the run with
    # it; the faulty test plugins fail them (scenario faulty-plugins).
    process_laws = {"no_crash", "no_timeout", "no_out_of_bounds_write", "writes_every_output"}
    ran = {l["law"] for i in report["implementations"] for l in i["laws"] if l["status"] != "skipped"}
    members = zoo_rows()
    failed_somewhere = {l["law"] for i in report["implementations"] if i["name"] in members
                        for l in i["laws"] if l["status"] == "fail"}
    unproven = sorted(ran - process_laws - failed_somewhere)
    expect(not unproven, f"laws of the embedded default that no zoo member fails there: {unproven}")
elif scenario == "v2-zoo":
    # ABI v2: every v2 zoo member fails the law written for its fault; the
    # references and the v2 example plugin pass every v2 law on judged cases;
    # a v1 plugin has the v2 laws skipped with the reason, never passed.
    # The v2 members (a v2 entry, no backward of their own) and the laws their rows pin.
    # Not the members of version 3's features and promises (their laws and members are judged by
    # the zoo tests, plugin_v3_cli_* and the embedded default): with them this scenario ran
    # every paged, format and promise law on every member, a minute of the Release pass.
    v3_laws = {"rerun_bit_identical", "backward_rerun_bit_identical", "batch_invariance"}
    expected = {name: row["pinned"] for name, row in zoo_rows().items()
                if row["v2"] and not row["backward"] and not row["v3"] and not set(row["pinned"]) & v3_laws}
    expect(len(expected) >= 9, expected)
    v2_laws = ["gqa_equals_repeated_kv", "layout_invariance", "lengths_equal_slices", "window_equals_mask",
               "alibi_equals_bias", "softcap_bounds_weights", "sink_equals_extra_key",
               "bias_row_shift_invariance", "lse_matches_oracle"]
    args = []
    for name in list(expected) + ["reference", "online"]:
        args += ["--impl", name]
    for name in sorted(set(v2_laws + ["matches_oracle"]) | {n for p in expected.values() for n in p}):
        args += ["--law", name]
    # Rows of at most 2,048 keys: this scenario is about version 2's features, which its members
    # get wrong at any length; issue #33's long rows (2,049 to 32,768 keys) made the plain C
    # examples' laws half a minute of it (the embedded default and the shapes tests judge long
    # rows). --shrink-seconds 2: only verdicts are checked here.
    out, report = run(args + ["--plugin", os.path.join(plugin_dir, "libexample_attention_v2.so"),
                              "--plugin", os.path.join(plugin_dir, "libexample_attention.so"),
                              "--kv-len", "1..2048", "--shrink-seconds", "2"], 1)
    for member, pinned in expected.items():
        for law_name in pinned:
            l = law(report, member, law_name)
            expect(l["status"] == "fail", (member, l))
    for impl in ("reference", "online", "example_c_v2"):
        for name in v2_laws:
            l = law(report, impl, name)
            expect(l["status"] == "pass" and l["judged"] >= 20, (impl, l))
    for name in v2_laws:
        l = law(report, "example_c", name)
        expect(l["status"] == "skipped" and "does not declare" in l["message"], l)
elif scenario == "v2-features-alone":
    # The v2 example plugin declaring one feature at a time: it passes, the laws
    # about that feature judge cases that use it, matches_oracle judges it too,
    # and every law about an undeclared feature is skipped with that reason.
    about = {"gqa": ["gqa_equals_repeated_kv"], "strides": ["layout_invariance"],
             "lengths": ["lengths_equal_slices"], "softcap": ["softcap_bounds_weights"],
             "bias": ["bias_row_shift_invariance"], "lse": ["lse_matches_oracle"],
             "window": [], "alibi": [], "sinks": [], "mask": ["masked_keys_ignored"],
             "causal": ["causal_prefix_consistency"]}
    # The laws about features, matches_oracle and grad_matches_oracle (which
    # draw every feature the plugin declares): the rest of the catalogue draws
    # no v2 feature and made this scenario two minutes long.
    feature_laws = sorted({n for ls in about.values() for n in ls} |
                          {"window_equals_mask", "alibi_equals_bias", "sink_equals_extra_key",
                           "matches_oracle", "grad_matches_oracle"})
    law_flags = [f for n in feature_laws for f in ("--law", n)]
    for feature, laws in about.items():
        path = os.path.join(test_plugin_dir, f"example_v2_{feature}_plugin.so")
        # (a generous call limit: the example's plain loops at the largest
        # shapes take seconds on a loaded machine, and no_timeout is not
        # what this scenario is about)
        out, report = run(["--plugin", path, "--cases", "30", "--timeout-ms", "30000"] + law_flags, 0)
        impl = report["implementations"][0]
        expect(impl["verdict"] == "pass", (feature, impl))
        by_name = {l["law"]: l for l in impl["laws"]}
        for name in laws + ["matches_oracle"]:
            l = by_name[name]
            expect(l["status"] == "pass" and l["judged"] >= 20, (feature, l))
            expect(feature in l.get("features", []), (feature, name, l.get("features")))
        for l in impl["laws"]:
            # (a plugin with a backward also has its gradient laws judge backward problems)
            expect(set(l.get("features", [])) <= {feature, "backward"}, (feature, l))
            if l["status"] == "skipped" and "the law is about" in l.get("message", ""):
                expect("does not declare" in l["message"], l)
elif scenario == "save-replay":
    # A failing plugin's cases are saved; replay fails on that plugin and passes on a
    # correct plugin and on the reference; a damaged file is named while the rest run.
    cases = os.path.join(work, "saved-cases")
    import shutil
    shutil.rmtree(cases, ignore_errors=True)
    seed_layer = os.path.join(plugin_dir, "libseed_layer.so")
    example = os.path.join(plugin_dir, "libexample_attention.so")
    run(["--plugin", seed_layer, "--save-failures", cases], 1)
    saved = sorted(f for f in os.listdir(cases) if f.endswith(".json"))
    expect(saved, "no case saved")

    def replay(args, expect_rc):
        p = subprocess.run([attncheck, "replay", cases] + args, capture_output=True, text=True, timeout=600)
        if p.returncode != expect_rc:
            sys.exit(f"replay {args}: exit {p.returncode}, expected {expect_rc}\n{p.stdout}\n{p.stderr}")
        return p

    replay(["--plugin", seed_layer], 1)
    replay(["--plugin", example], 0)
    replay(["--impl", "reference"], 0)
    replay([], 1)  # against the implementation each case recorded: seed_layer again
    with open(os.path.join(cases, "damaged.json"), "w") as f:
        f.write('{"schema_version": 1, "law": "matches_oracle", "problem": {"dtype": "f32", "batch": 1099511627776')
    p = replay(["--impl", "reference"], 2)
    expect("damaged.json" in p.stderr, p.stderr)
    expect(p.stdout.count("PASS") == len(saved), p.stdout)  # the others still ran
elif scenario == "jobs-same-report":
    # --jobs 1 and --jobs 2 with the same seed give the same report and console,
    # timings and the run's start time apart.
    import re

    def without_timings(value):
        if isinstance(value, dict):
            return {k: without_timings(v) for k, v in value.items()
                    if k not in ("seconds", "wall_seconds", "timestamp")}
        if isinstance(value, list):
            return [without_timings(v) for v in value]
        return value

    def same_report(args, names):
        outputs, reports = [], []
        for jobs in ("1", "2"):
            out, report = run(args + ["--jobs", jobs], 1)
            out = re.sub(r"checked in \d+(\.\d+)? s", "checked in t s", out)  # the run's wall time
            outputs.append(re.sub(r"\(\d+(\.\d+)? s\)", "(t s)", out))
            reports.append(without_timings(report))
        got = [i["name"] for i in reports[0]["implementations"]]
        expect(got == names, got)
        for one, two in zip(reports[0]["implementations"], reports[1]["implementations"]):
            for a, b in zip(one["laws"], two["laws"]):
                expect(a == b, f"{one['name']}: --jobs 1 and --jobs 2 differ:\n{a}\n{b}")
        expect(reports[0] == reports[1], "the JSON reports of --jobs 1 and --jobs 2 differ")
        expect(outputs[0] == outputs[1], f"the console output differs:\n{outputs[0]}\n----\n{outputs[1]}")
        return reports[1]

    # A reference, zoo members that fail (one keeps state between calls), a correct plugin.
    # Timing must decide nothing: none of them hangs, so a long call limit keeps a slow call
    # (a sanitizer, a loaded machine) from timing out in one run only.
    report = same_report(["--impl", "reference", "--impl", "scale_inverse_d", "--impl", "nondeterministic_order",
                          "--plugin", os.path.join(plugin_dir, "libexample_attention.so"), "--cases", "30",
                          "--timeout-ms", "20000"],
                         ["example_c", "reference", "scale_inverse_d", "nondeterministic_order"])
    expect(law(report, "scale_inverse_d", "default_scale_is_inverse_sqrt_d")["status"] == "fail", 'law(report, "scale_inverse_d", "default_scale_is_inverse_sqrt_d")["status"] == "fail"')
    expect(law(report, "nondeterministic_order", "deterministic")["status"] == "fail", 'law(report, "nondeterministic_order", "deterministic")["status"] == "fail"')
    # A plugin that crashes (kv_len > 3), restarted in each worker's own host. Few cases
    # of kv_len up to 4 keep its crashes below a law's fault budget (20), whose other
    # bound, 1 s spent in faulting calls (a crash and a restart each), would be reached
    # at a different case in each run under a sanitizer.
    report = same_report(["--plugin", os.path.join(test_plugin_dir, "crash_plugin.so"), "--dtype", "f32,f64",
                          "--kv-len", "1..4", "--cases", "12", "--timeout-ms", "20000"], ["crash_plugin"])
    expect(law(report, "crash_plugin", "no_crash")["status"] == "fail", 'law(report, "crash_plugin", "no_crash")["status"] == "fail"')
    expect(not any("stopped early" in l.get("message", "") for l in report["implementations"][0]["laws"]), "the crash plugin reached a law's fault budget: the test's shapes no longer keep timing out of it")
else:
    sys.exit("unknown scenario " + scenario)
print(scenario, "ok")
