#!/usr/bin/python3
"""End-to-end checks that every verdict is earned (issue #30): a law that judged
too few cases for any reason (the --budget, crashes on every call, refusals) is
insufficient, never a pass or a silent skip; a declared v2 feature refused on
every call fails; a replay that judged nothing is not a pass, and refused case
files are in every report; an expected failure never turns an implementation
that completed no call into a pass. Standard library only.

Usage: verdict_cli.py ATTNCHECK SCENARIO TEST_PLUGIN_DIR SOURCE_DIR WORKDIR
Scenarios: feature-refused, budget-spent, budget-huge, replay-judged-nothing,
replay-refused-files, expect-fail-no-judged, process-laws-backward.
"""
import json
import os
import shutil
import subprocess
import sys
import xml.dom.minidom

attncheck, scenario, test_plugin_dir, source_dir, work = sys.argv[1:6]
work = os.path.join(work, scenario)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
js = os.path.join(work, "report.json")
junit = os.path.join(work, "report.xml")
md = os.path.join(work, "summary.md")
ENV = {k: v for k, v in os.environ.items() if k not in ("CI", "NO_COLOR", "ATTNCHECK_SEED")}
PROCESS_LAWS = {"no_crash", "no_timeout", "no_out_of_bounds_write", "writes_every_output"}


def fail(message):
    sys.exit(f"{scenario}: {message}")


def expect(condition, message):
    if not condition:
        fail(message)


def plugin(stem):
    return os.path.join(test_plugin_dir, stem + ".so")


def run(args, expect_rc):
    p = subprocess.run([attncheck] + args, capture_output=True, text=True, timeout=110, env=ENV)
    expect(p.returncode == expect_rc, f"attncheck {' '.join(args)}: exit {p.returncode}, expected {expect_rc}\n"
                                      f"{p.stdout[-4000:]}\n{p.stderr[-2000:]}")
    return p


def laws_of(report, k=0):
    return {l["law"]: l for l in report["implementations"][k]["laws"]}


def junit_cases(path):
    """(testcase element, 'failure'|'error'|'skipped'|'pass') for every testcase;
    checked against the restated junit-10.xsd when xmllint is there."""
    if shutil.which("xmllint"):
        schema = os.path.join(source_dir, "tests", "cli", "schema", "junit-10.xsd")
        v = subprocess.run(["xmllint", "--noout", "--schema", schema, path], capture_output=True, text=True)
        expect(v.returncode == 0, f"{path} is not valid junit-10.xsd: {v.stderr}")
    doc = xml.dom.minidom.parse(path)
    out = []
    for c in doc.getElementsByTagName("testcase"):
        kinds = [k for k in ("failure", "error", "skipped") if c.getElementsByTagName(k)]
        out.append((c, kinds[0] if kinds else "pass"))
    return doc, out


if scenario == "feature-refused":
    # Defect 4: SOFTCAP declared, every soft-capped call refused: a failure that
    # names the feature, not a skipped softcap_bounds_weights and a passing run.
    args = ["check", "--law", "softcap_bounds_weights", "--law", "matches_oracle", "--cases", "30", "--seed", "7",
            "--timeout-ms", "30000", "--json", js]
    p = run(args[:1] + ["--plugin", plugin("refuse_softcap_plugin")] + args[1:], 1)
    laws = laws_of(json.load(open(js)))
    sc = laws["softcap_bounds_weights"]
    expect(sc["status"] == "fail", f"softcap_bounds_weights: {sc}")
    expect("softcap" in sc["message"] and "UNSUPPORTED" in sc["message"], f"the message names no feature: {sc}")
    expect("softcap" in p.stdout, p.stdout[-3000:])
    # The control: the same example declaring SOFTCAP and computing it passes.
    run(args[:1] + ["--plugin", plugin("example_v2_softcap_plugin")] + args[1:], 0)
    print("a declared feature refused on every call fails, naming it")

elif scenario == "budget-spent":
    # Defect 5: laws left unrun by --budget are insufficient with the reason, and the run fails.
    p = run(["check", "--impl", "seed_unscaled", "--budget", "0.001", "--seed", "1", "--jobs", "1", "--json", js,
             "--junit", junit], 1)
    report = json.load(open(js))
    impl = report["implementations"][0]
    expect(impl["verdict"] == "fail", impl["verdict"])
    laws = laws_of(report)
    passed = [n for n, l in laws.items() if l["status"] == "pass"]
    expect(not passed, f"passed without the time to judge: {passed}")
    unrun = [l for l in laws.values() if l["status"] == "insufficient" and "not run" in l.get("message", "")]
    expect(unrun, f"no law reported as not run: {list(laws.values())[:3]}")
    expect(all("--budget of 0.001 s was spent" in l["message"] for l in unrun), unrun[0])
    skipped = [n for n, l in laws.items() if l["status"] == "skipped" and "does not declare" not in l["message"]
               and "the law is about" not in l["message"]]
    expect(not skipped, f"skipped for lack of time: {skipped}")
    _, cases = junit_cases(junit)
    expect(sum(k == "failure" for _, k in cases) >= len(unrun), "JUnit does not count the unrun laws as failures")
    # The same under --jobs 2: the workers find the budget spent as well.
    run(["check", "--impl", "seed_unscaled", "--budget", "0.001", "--seed", "1", "--jobs", "2", "--json", js], 1)
    expect(not [n for n, l in laws_of(json.load(open(js))).items() if l["status"] == "pass"], "passed under --jobs 2")
    print(f"--budget 0.001: {len(unrun)} law(s) insufficient, not run; the run fails")

elif scenario == "budget-huge":
    # Defect 6: a budget past what a deadline can hold is no limit, not one already spent.
    for budget in ("1e10", "inf", "1e300"):
        p = run(["check", "--impl", "reference", "--law", "matches_oracle", "--law", "weights_sum_to_one",
                 "--cases", "5", "--seed", "1", "--budget", budget, "--json", js], 0)
        for name, l in laws_of(json.load(open(js))).items():
            expect(l["status"] == "pass" and l["judged"] == 5, f"--budget {budget}: {name}: {l}")
        expect("was spent" not in p.stdout, f"--budget {budget}: {p.stdout[-2000:]}")
    print("--budget 1e10, inf, 1e300: no limit in practice")

elif scenario == "replay-judged-nothing":
    # Defect 7: a replay in which the implementation answered no case is not a pass.
    cases = os.path.join(work, "cases")
    run(["check", "--impl", "seed_unscaled", "--law", "matches_oracle", "--law", "query_sensitivity", "--cases",
         "20", "--seed", "3", "--save-failures", cases], 1)
    saved = sorted(os.listdir(cases))
    expect(saved, "no case saved")
    p = run(["replay", cases, "--plugin", plugin("refuse_all_plugin"), "--json", js, "--junit", junit,
             "--markdown", md], 1)
    impl = json.load(open(js))["implementations"][0]
    expect(impl["verdict"] == "fail", f"verdict {impl['verdict']}")
    expect(all(l["status"] == "insufficient" and l["judged"] == 0 for l in impl["laws"]), impl["laws"])
    expect(all("UNSUPPORTED" in l["message"] or "refuse_all" in l["message"] for l in impl["laws"]), impl["laws"])
    doc, junit_kinds = junit_cases(junit)
    expect(len(junit_kinds) == len(saved) and all(k == "failure" for _, k in junit_kinds), [k for _, k in junit_kinds])
    expect(open(md).read().startswith("## attncheck replay: ❌ FAIL"), open(md).read()[:200])
    expect("judged no case" in p.stdout, p.stdout)
    print(f"replay of {len(saved)} case(s) that were all refused: exit 1, verdict fail")

elif scenario == "replay-refused-files":
    # Defect 8: refused case files are errors in every report, not left out.
    cases = os.path.join(work, "damaged")
    os.makedirs(cases)
    with open(os.path.join(cases, "not-json.json"), "w") as f:
        f.write("this is not JSON")
    with open(os.path.join(cases, "empty-object.json"), "w") as f:
        f.write("{}")
    p = run(["replay", cases, "--impl", "reference", "--json", js, "--junit", junit, "--markdown", md], 2)
    report = json.load(open(js))
    entries = [l for i in report["implementations"] for l in i["laws"]]
    for name in ("not-json.json", "empty-object.json"):
        mine = [l for l in entries if name in l.get("replayed", "")]
        expect(len(mine) == 1 and mine[0]["status"] not in ("pass", "skipped"), f"{name} in the JSON: {mine}")
    expect(all(i["verdict"] == "fail" for i in report["implementations"]), report["implementations"])
    doc, kinds = junit_cases(junit)
    bad = [c.getAttribute("name") for c, k in kinds if k not in ("failure", "error")]
    expect(len(kinds) == 2 and not bad, f"JUnit testcases {[(c.getAttribute('name'), k) for c, k in kinds]}")
    suites = doc.getElementsByTagName("testsuites")[0]
    expect(int(suites.getAttribute("tests")) == 2 and
           int(suites.getAttribute("failures")) + int(suites.getAttribute("errors")) == 2, suites.toxml()[:300])
    text = open(md).read()
    expect(text.startswith("## attncheck replay: ❌ FAIL") and "not-json.json" in text and "empty-object.json" in text,
           text[:600])
    expect("REFUSED" in p.stderr and "not-json.json" in p.stderr, p.stderr)
    print("refused case files: in the JSON, JUnit and Markdown as failed, exit 2")

elif scenario == "expect-fail-no-judged":
    # Defect 13: every call aborts. no_crash's expected failure must not make that a pass,
    # and the laws that judged nothing are insufficient, not skipped.
    # (5 cases: every call aborts and restarts the plugin's process, which costs 60 ms a time
    # under asan; the laws judge none of them however many there are.)
    base = ["check", "--plugin", plugin("abort_plugin"), "--cases", "5", "--seed", "5", "--jobs", "1",
            "--expect-fail", "no_crash:known", "--json", js]
    run(base, 1)
    report = json.load(open(js))
    laws = laws_of(report)
    expect(report["implementations"][0]["verdict"] == "fail", report["implementations"][0]["verdict"])
    # Not honoured: no call of the plugin completed, so the declared failure is a failure.
    expect(laws["no_crash"]["status"] == "fail" and "not honoured" in laws["no_crash"]["message"], laws["no_crash"])
    for name in ("matches_oracle", "weights_sum_to_one", "no_timeout", "writes_every_output"):
        l = laws[name]
        expect(l["status"] == "insufficient" and l["judged"] == 0 and "process fault" in l["message"], f"{name}: {l}")
    skipped = [n for n, l in laws.items() if l["status"] == "skipped" and "does not declare" not in l["message"]]
    expect(not skipped, f"skipped though every call aborted: {skipped}")
    # With the insufficient laws allowed, the expected failure is all that is left: still not a pass.
    # no_crash and one law that judged nothing are enough to show it (each aborting call restarts
    # the plugin's process: a second whole catalogue would cost 10 s under asan for nothing).
    p = run(base + ["--allow-insufficient", "--law", "no_crash", "--law", "matches_oracle"], 1)
    l = laws_of(json.load(open(js)))["no_crash"]
    expect(l["status"] == "fail" and "expected failure" in l["message"], l)
    # The control: a plugin that completes its other calls keeps its expected failure.
    run(["check", "--plugin", plugin("crash_plugin"), "--law", "no_crash", "--law", "matches_oracle", "--cases", "20",
         "--seed", "5", "--expect-fail", "no_crash:known", "--allow-insufficient", "--json", js], 0)
    expect(laws_of(json.load(open(js)))["no_crash"]["status"] == "expected_fail", "the control lost its expectation")
    print("every call aborted: insufficient laws, and an expected no_crash failure is no pass")

elif scenario == "process-laws-backward":
    # Item 7: every backward call crashes. The process laws judge backward calls too,
    # count only calls that completed, and none of them passes on forward calls alone.
    laws_args = [a for n in sorted(PROCESS_LAWS) for a in ("--law", n)]
    run(["check", "--plugin", plugin("v2_grad_crash_plugin"), "--cases", "30", "--seed", "2", "--json", js] +
        laws_args, 1)
    laws = laws_of(json.load(open(js)))
    expect(laws["no_crash"]["status"] == "fail" and "backward" in laws["no_crash"]["message"], laws["no_crash"])
    for name in PROCESS_LAWS - {"no_crash"}:
        l = laws[name]
        expect(l["status"] == "insufficient" and "backward" in l["message"], f"{name}: {l}")
    # A plugin whose backward is sound passes them, backward calls judged.
    run(["check", "--plugin", plugin("v2_grad_plugin"), "--cases", "30", "--seed", "2", "--json", js] + laws_args, 0)
    for name, l in laws_of(json.load(open(js))).items():
        expect(l["status"] == "pass" and "backward" in l.get("features", []), f"{name}: {l}")
    print("process laws: backward calls judged; none passes when every backward crashed")

else:
    fail("unknown scenario")
