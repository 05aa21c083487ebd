#!/usr/bin/python3
"""End-to-end checks of what CI systems and people read from attncheck (issue #16):
JUnit against junit-10.xsd, the Markdown summary, expected outcomes, replay of
several paths with reports, ATTNCHECK_SEED, the terminal (progress line,
colour, quiet) and --help. Standard library only; run with Debian's
/usr/bin/python3.

Usage: ci_reports.py ATTNCHECK SCENARIO SOURCE_DIR PLUGIN_DIR WORKDIR
Scenarios: junit-schema, markdown, expect-fail, config, skip-law, seed-env,
replay-recorded, replay-paths, terminal, help.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import xml.dom.minidom

from pty_run import run_on_pty

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from expect import expect  # noqa: E402  (not assert: python -O strips asserts)

attncheck, scenario, source_dir, plugin_dir, work = (os.path.abspath(a) for a in sys.argv[1:6])
scenario = sys.argv[2]
os.makedirs(work, exist_ok=True)
schema = os.path.join(source_dir, "tests", "cli", "schema", "junit-10.xsd")
example = os.path.join(plugin_dir, "libexample_attention.so")
# The environment of a plain run: no CI, no NO_COLOR, no seed from outside.
ENV = {k: v for k, v in os.environ.items() if k not in ("CI", "NO_COLOR", "ATTNCHECK_SEED")}


def run(args, expect_rc, env=None, cwd=None):
    p = subprocess.run([attncheck] + args, capture_output=True, text=True, timeout=300, env=env or ENV, cwd=cwd)
    if p.returncode != expect_rc:
        sys.exit(f"attncheck {' '.join(args)}: exit {p.returncode}, expected {expect_rc}\n"
                 f"{p.stdout[-4000:]}\n{p.stderr[-2000:]}")
    return p


def validate(path):
    """xmllint against the restated junit-10.xsd; exits the test on a refusal."""
    p = subprocess.run(["xmllint", "--noout", "--schema", schema, path], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{path} does not validate against junit-10.xsd:\n{p.stderr[-3000:]}")


def testcases(path):
    doc = xml.dom.minidom.parse(path)
    return doc, doc.getElementsByTagName("testcase")


def statuses(report, impl=0):
    return {l["law"]: l["status"] for l in report["implementations"][impl]["laws"]}


if scenario == "junit-schema":
    # The negative control: the schema refuses what attncheck wrote before (skipped= on
    # <testsuites>, an exponent in a suite's time), so a passing validation means something.
    bad = os.path.join(work, "bad.xml")
    with open(bad, "w") as f:
        f.write('<?xml version="1.0"?>\n<testsuites tests="1" skipped="0">'
                '<testsuite name="s" tests="1" failures="0" errors="0" time="1e-05">'
                '<testcase name="t" classname="s"/></testsuite></testsuites>\n')
    p = subprocess.run(["xmllint", "--noout", "--schema", schema, bad], capture_output=True, text=True)
    expect(p.returncode != 0 and "skipped" in p.stderr, p.stderr)

    # A reference and a zoo member: a valid file that holds the failures.
    junit = os.path.join(work, "check.xml")
    js = os.path.join(work, "check.json")
    run(["check", "--impl", "reference", "--impl", "seed_unscaled", "--cases", "20", "--seed", "1",
         "--law", "matches_oracle", "--law", "query_sensitivity", "--law", "weights_sum_to_one",
         "--junit", junit, "--json", js], 1)
    validate(junit)
    doc, cases = testcases(junit)
    report = json.load(open(js))
    seconds = {(i["name"], l["law"]): l["seconds"] for i in report["implementations"] for l in i["laws"]}
    pairs = set()
    for c in cases:
        key = (c.getAttribute("classname"), c.getAttribute("name"))
        expect(key not in pairs, f"duplicate testcase {key}")
        pairs.add(key)
        expect(c.hasAttribute("time"), key)
        expect(abs(float(c.getAttribute("time")) - seconds[key]) < 0.0015, (key, c.getAttribute("time"), seconds[key]))
    failed = {c.getAttribute("name") for c in cases
              if c.getAttribute("classname") == "seed_unscaled" and c.getElementsByTagName("failure")}
    expect(failed == {"matches_oracle", "query_sensitivity"}, failed)
    for s in doc.getElementsByTagName("testsuite"):
        expect(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", s.getAttribute("timestamp")), s.getAttribute("timestamp"))
        expect(s.getAttribute("hostname"), "no hostname")
    expect(not doc.documentElement.hasAttribute("skipped"), 'not doc.documentElement.hasAttribute("skipped")')

    # Two plugins that call themselves the same: a label, and a suffix without one.
    junit2 = os.path.join(work, "twins.xml")
    js2 = os.path.join(work, "twins.json")
    run(["check", "--plugin", example, "--plugin", example, "--plugin", "mine=" + example, "--cases", "5",
         "--law", "weights_sum_to_one", "--seed", "1", "--junit", junit2, "--json", js2], 0)
    validate(junit2)
    names = [i["name"] for i in json.load(open(js2))["implementations"]]
    expect(len(set(names)) == 3 and "mine" in names, names)
    expect(names[1] == names[0] + "-2", names)
    _, cases = testcases(junit2)
    expect(len({(c.getAttribute("classname"), c.getAttribute("name")) for c in cases}) == 3, 'len({(c.getAttribute("classname"), c.getAttribute("name")) for c in cases}) == 3')
    run(["check", "--plugin", "a=" + example, "--plugin", "a=" + example, "--cases", "5"], 2)

    # Expected failures and a replay: valid too.
    junit3 = os.path.join(work, "xfail.xml")
    run(["check", "--impl", "seed_unscaled", "--impl", "reference", "--law", "matches_oracle", "--cases", "20",
         "--seed", "1", "--expect-fail", "seed_unscaled/matches_oracle:the unscaled seed layer", "--junit", junit3], 0)
    validate(junit3)
    _, cases = testcases(junit3)
    skipped = [c for c in cases if c.getElementsByTagName("skipped")]
    expect(len(skipped) == 1 and skipped[0].getElementsByTagName("skipped")[0].getAttribute("type") == "expected_fail", 'len(skipped) == 1 and skipped[0].getElementsByTagName("skipped")[0].getAttribute("type") == "expected_fail"')
    junit4 = os.path.join(work, "replay.xml")
    cases_dir = os.path.join(source_dir, "regression", "cases")
    files = sorted(os.path.join(cases_dir, f) for f in os.listdir(cases_dir) if f.startswith("matches_oracle"))
    run(["replay"] + files + ["--impl", "reference", "--junit", junit4], 0)
    validate(junit4)
    _, cases = testcases(junit4)
    expect(len(cases) == len(files), len(cases))
    print(f"junit-schema: {len(pairs)} testcases valid, the old form refused")

elif scenario == "markdown":
    md = os.path.join(work, "summary.md")
    run(["check", "--impl", "reference", "--impl", "seed_unscaled", "--cases", "20", "--seed", "1",
         "--law", "matches_oracle", "--law", "weights_sum_to_one", "--expect-fail", "seed_unscaled/matches_oracle",
         "--impl", "kv_swapped", "--markdown", md], 1)
    text = open(md).read()
    rows = [l for l in text.splitlines() if l.startswith("|")]
    expect(rows[0] == "| law | reference | seed\\_unscaled | kv\\_swapped |", rows[0])
    expect(rows[1] == "|---|---|---|---|", rows[1])
    law_row = next(r for r in rows if r.startswith("| matches\\_oracle"))
    cells = [c.strip() for c in law_row.strip("|").split("|")]
    expect(cells[1].startswith("✅") and cells[2].startswith("⚠️ expected fail") and cells[3].startswith("❌ fail"), cells)
    expect("**fail**" in rows[-1] and "**pass**" in rows[-1], rows[-1])
    expect("reproduce: `" in text and "--impl kv_swapped --law matches_oracle" in text, text)
    expect(text.startswith("## attncheck check: ❌ FAIL"), text[:80])
    print("markdown: table, expected failure, reproduce command")

elif scenario == "expect-fail":
    js = os.path.join(work, "x.json")
    base = ["check", "--impl", "seed_unscaled", "--law", "matches_oracle", "--law", "query_sensitivity",
            "--law", "weights_sum_to_one", "--cases", "20", "--seed", "1", "--json", js]
    run(base, 1)
    # Both failures declared: exit 0, the statuses say so, `fail` keeps its meaning.
    p = run(base + ["--expect-fail", "matches_oracle:https://example.org/issue/1",
                    "--expect-fail", "seed_unscaled/query_sensitivity"], 0)
    report = json.load(open(js))
    st = statuses(report)
    expect(st == {"matches_oracle": "expected_fail", "query_sensitivity": "expected_fail",
                  "weights_sum_to_one": "pass"}, st)
    expect(report["implementations"][0]["verdict"] == "pass", 'report["implementations"][0]["verdict"] == "pass"')
    law = next(l for l in report["implementations"][0]["laws"] if l["law"] == "matches_oracle")
    expect(law["expected_failure"] == "https://example.org/issue/1" and law["message"], law)
    expect("XFAIL" in p.stdout and "2 expected failure(s)" in p.stdout, p.stdout)
    # One declared, one not: the undeclared one still fails the run.
    run(base + ["--expect-fail", "matches_oracle"], 1)
    # Declared for another implementation only: no effect here.
    run(["check", "--impl", "seed_unscaled", "--impl", "reference", "--law", "matches_oracle", "--cases", "20",
         "--seed", "1", "--expect-fail", "reference/matches_oracle", "--json", js], 1)
    st = statuses(json.load(open(js)), 1)
    expect(st["matches_oracle"] == "unexpected_pass", st)
    p = run(["check", "--impl", "reference", "--law", "weights_sum_to_one", "--cases", "5", "--seed", "1",
             "--expect-fail", "weights_sum_to_one:fixed upstream?", "--json", js], 1)
    expect(statuses(json.load(open(js)))["weights_sum_to_one"] == "unexpected_pass", 'statuses(json.load(open(js)))["weights_sum_to_one"] == "unexpected_pass"')
    expect("XPASS" in p.stdout and "remove the expectation" in p.stdout, p.stdout)
    # Bad declarations are usage errors, named.
    for bad, word in [("no_such_law", "no_such_law"), ("nobody/matches_oracle", "nobody"), ("/matches_oracle", "IMPL")]:
        p = run(["check", "--impl", "reference", "--cases", "5", "--expect-fail", bad], 2)
        expect(word in p.stderr, p.stderr)
    # A saved case of an expected failure records it, and replays as expected.
    cases = os.path.join(work, "saved")
    shutil.rmtree(cases, ignore_errors=True)
    run(base + ["--expect-fail", "matches_oracle", "--expect-fail", "query_sensitivity", "--save-failures", cases], 0)
    saved = sorted(os.listdir(cases))
    expect(saved and all(json.load(open(os.path.join(cases, f)))["expect"] == "fail" for f in saved), saved)
    p = run(["replay", cases], 0)
    expect(p.stdout.count("XFAIL") == len(saved), p.stdout)
    print(f"expect-fail: XFAIL, XPASS, scoping, {len(saved)} saved cases replayed as expected")

elif scenario == "config":
    js = os.path.join(work, "c.json")
    cfg = os.path.join(work, "attncheck.json")
    with open(cfg, "w") as f:
        json.dump({"skip_law": ["weights_sum_to_one"],
                   "expect_fail": [{"law": "matches_oracle", "implementation": "seed_unscaled",
                                    "reason": "https://example.org/upstream/42"}]}, f)
    run(["check", "--impl", "seed_unscaled", "--impl", "reference", "--law", "matches_oracle",
         "--law", "weights_sum_to_one", "--cases", "20", "--seed", "1", "--config", cfg, "--json", js], 0)
    report = json.load(open(js))
    expect(statuses(report, 0) == {"matches_oracle": "expected_fail", "weights_sum_to_one": "skipped"}, statuses(report))
    expect(statuses(report, 1) == {"matches_oracle": "pass", "weights_sum_to_one": "skipped"}, statuses(report, 1))
    # "strict": false, a failure some machines show: expected_fail where it
    # fails, a plain pass (with a note) where it passes, exit 0 either way.
    with open(cfg, "w") as f:
        json.dump({"expect_fail": [{"law": "matches_oracle", "reason": "CPU-dependent kernel", "strict": False}]}, f)
    p = run(["check", "--impl", "seed_unscaled", "--impl", "reference", "--law", "matches_oracle",
             "--cases", "20", "--seed", "1", "--config", cfg, "--json", js], 0)
    report = json.load(open(js))
    expect(statuses(report, 0) == {"matches_oracle": "expected_fail"}, statuses(report))
    expect(statuses(report, 1) == {"matches_oracle": "pass"}, statuses(report, 1))
    expect(not re.search(r"XPASS \d", p.stdout) and "declared to fail on some machines" in p.stdout, p.stdout)
    with open(cfg, "w") as f:  # strict must be a boolean
        json.dump({"expect_fail": [{"law": "matches_oracle", "strict": "no"}]}, f)
    p = run(["check", "--impl", "reference", "--cases", "5", "--config", cfg], 2)
    expect("strict must be true or false" in p.stderr, p.stderr)
    for text, word in [('{"expect_fail": [{"law": "matches_oracle", "impl": "x"}]}', "impl"),
                       ('{"skip": []}', "skip"), ('[1]', "object"), ('{', "JSON"),
                       ('{"skip_law": ["nope"]}', "nope")]:
        with open(cfg, "w") as f:
            f.write(text)
        p = run(["check", "--impl", "reference", "--cases", "5", "--config", cfg], 2)
        expect(word in p.stderr and cfg in p.stderr or word == "nope" and word in p.stderr, (text, p.stderr))
    run(["check", "--impl", "reference", "--cases", "5", "--config", os.path.join(work, "missing.json")], 2)
    print("config: skip_law, expect_fail per implementation, strict false, bad files refused")

elif scenario == "skip-law":
    js = os.path.join(work, "s.json")
    p = run(["check", "--impl", "seed_unscaled", "--law", "matches_oracle", "--law", "weights_sum_to_one",
             "--skip-law", "matches_oracle", "--cases", "20", "--seed", "1", "--json", js], 0)
    laws = json.load(open(js))["implementations"][0]["laws"]
    expect([(l["law"], l["status"]) for l in laws] == [("weights_sum_to_one", "pass"), ("matches_oracle", "skipped")] or \
        [(l["law"], l["status"]) for l in laws] == [("matches_oracle", "skipped"), ("weights_sum_to_one", "pass")], laws)
    expect(next(l for l in laws if l["law"] == "matches_oracle")["message"] == "not run: --skip-law", 'next(l for l in laws if l["law"] == "matches_oracle")["message"] == "not run: --skip-law"')
    p = run(["check", "--impl", "reference", "--skip-law", "no_such_law"], 2)
    expect("no_such_law" in p.stderr, p.stderr)
    print("skip-law: reported skipped, not run; unknown law refused")

elif scenario == "seed-env":
    env = dict(ENV, ATTNCHECK_SEED="4242")
    p = run(["check", "--impl", "reference", "--law", "weights_sum_to_one", "--cases", "5"], 0, env=env)
    expect("seed: 4242 (from ATTNCHECK_SEED)" in p.stdout and "--seed 4242" in p.stdout, p.stdout)
    p = run(["check", "--impl", "reference", "--law", "weights_sum_to_one", "--cases", "5", "--seed", "7"], 0, env=env)
    expect("seed: 7\n" in p.stdout, p.stdout)
    # Refused with the usage-error exit (2), naming the text: not read as seed 12 or seed 0.
    for bad in ("12x", "abc", "-1"):
        p = run(["check", "--impl", "reference", "--cases", "5"], 2, env=dict(ENV, ATTNCHECK_SEED=bad))
        expect(f"ATTNCHECK_SEED='{bad}' is not a seed" in p.stderr, p.stderr)
    # --seed wins over ATTNCHECK_SEED, which is then not read at all.
    p = run(["check", "--impl", "reference", "--law", "weights_sum_to_one", "--cases", "5", "--seed", "7"], 0,
            env=dict(ENV, ATTNCHECK_SEED="abc"))
    expect("seed: 7\n" in p.stdout, p.stdout)
    # The vector build: a lower one runs and reports the same; a bad name is refused.
    p = run(["check", "--impl", "online", "--law", "matches_oracle", "--cases", "5", "--seed", "7"], 0,
            env=dict(ENV, ATTNCHECK_VECTOR_ISA="baseline"))
    expect("pass" in p.stdout, p.stdout)
    p = run(["check", "--impl", "reference", "--cases", "5"], 2, env=dict(ENV, ATTNCHECK_VECTOR_ISA="avx3"))
    expect("ATTNCHECK_VECTOR_ISA=avx3 is not one of avx512, avx2, baseline" in p.stderr, p.stderr)
    print("seed-env: ATTNCHECK_SEED read, --seed wins, a bad value refused; ATTNCHECK_VECTOR_ISA likewise")

elif scenario == "replay-recorded":
    # As recorded, every case in regression/cases/ gives what it records: the
    # zoo's cases fail ("expect": "fail"), the fixed bugs' cases pass. The
    # libtorch adapter's cases name build/plugins/libtorch_attention.so: run
    # from a folder where build/ is this build tree; without the adapter they
    # are left out (a replay refuses a plugin it cannot load).
    cases = os.path.join(source_dir, "regression", "cases")
    root = os.path.join(work, "root")
    os.makedirs(root, exist_ok=True)
    link = os.path.join(root, "build")
    if os.path.islink(link):
        os.unlink(link)
    os.symlink(os.path.dirname(plugin_dir), link)
    torch = os.path.exists(os.path.join(plugin_dir, "libtorch_attention.so"))
    paths = [cases] if torch else [os.path.join(cases, f) for f in sorted(os.listdir(cases)) if not f.startswith("torch-")]
    js = os.path.join(work, "replay.json")
    p = run(["replay"] + paths + ["--json", js], 0, cwd=root)
    report = json.load(open(js))
    expect(report["mode"] == "replay", 'report["mode"] == "replay"')
    n_xfail = sum(l["status"] == "expected_fail" for i in report["implementations"] for l in i["laws"])
    n_pass = sum(l["status"] == "pass" for i in report["implementations"] for l in i["laws"])
    expect(n_xfail >= 10 and n_pass >= 8, (n_xfail, n_pass))
    expect("diagnosis: behaves like" in p.stdout, p.stdout)
    print(f"replay-recorded: {n_xfail} failed as recorded, {n_pass} passed" + ("" if torch else " (no libtorch adapter)"))

elif scenario == "replay-paths":
    cases = os.path.join(source_dir, "regression", "cases")
    a = os.path.join(cases, "matches_oracle-1216a54d650afb83.json")
    b = os.path.join(cases, "weights_sum_to_one-92d049504f9627a5.json")
    js, md, junit = (os.path.join(work, n) for n in ("r.json", "r.md", "r.xml"))
    # Two files (a shell glob gives several, a file named twice runs once): both replayed, reports written.
    # a is seed_unscaled's own case ("expect": "fail"): it fails as recorded; b is
    # seed_softmax_bypass's, which seed_unscaled (another implementation) must pass.
    run(["replay", a, b, a, "--impl", "seed_unscaled", "--json", js, "--markdown", md, "--junit", junit], 0)
    laws = json.load(open(js))["implementations"][0]["laws"]
    expect([l["replayed"] for l in laws] == [a, b], laws)
    expect([l["status"] for l in laws] == ["expected_fail", "pass"], laws)
    expect(laws[0]["diagnosis"].startswith("behaves like"), laws[0])
    validate(junit)
    expect("| case | seed\\_unscaled |" in open(md).read(), '"| case | seed\\\\_unscaled |" in open(md).read()')
    # The same case without its "expect": a failure, diagnosed, with the command that reproduces it.
    plain = os.path.join(work, "plain.json")
    case = json.load(open(a))
    del case["expect"]
    json.dump(case, open(plain, "w"))
    p = run(["replay", plain, "--json", js, "--markdown", md], 1)
    law = json.load(open(js))["implementations"][0]["laws"][0]
    expect(law["status"] == "fail" and law["reproduce"].endswith("replay " + plain + " --impl seed_unscaled"), law)
    expect("diagnosis: behaves like" in p.stdout and "reproduce: `" in open(md).read(), p.stdout)
    # Nothing found: exit 2, named.
    empty = os.path.join(work, "empty")
    os.makedirs(empty, exist_ok=True)
    p = run(["replay", empty], 2)
    expect("no case file" in p.stderr, p.stderr)
    p = run(["replay", empty, os.path.join(work, "nope")], 2)
    expect("nope" in p.stderr, p.stderr)
    print("replay-paths: several paths, reports, diagnosis, nothing found is exit 2")

elif scenario == "terminal":
    args = ["check", "--impl", "reference", "--law", "weights_sum_to_one", "--law", "matches_oracle",
            "--cases", "10", "--seed", "1", "--jobs", "1"]

    def on_tty(extra, env):
        """Runs with stdout and stderr on a pseudo-terminal; returns everything it wrote."""
        code, text = run_on_pty(attncheck, [attncheck] + args + extra, env)
        expect(code == 0, text[-2000:])
        return text

    tty = on_tty([], ENV)
    expect("\r\x1b[K[" in tty and "cases judged" in tty and "elapsed" in tty, repr(tty[-1500:]))
    expect("\x1b[32mPASS" in tty, "no colour on a terminal: " + repr(tty[-800:]))
    ci = on_tty([], dict(ENV, CI="true"))
    expect("cases judged" not in ci and "\x1b[" not in ci, repr(ci[-800:]))
    nc = on_tty([], dict(ENV, NO_COLOR="1"))
    expect("\x1b[32m" not in nc and "cases judged" in nc, repr(nc[-800:]))
    never = on_tty(["--color", "never"], ENV)
    expect("\x1b[32m" not in never, '"\\x1b[32m" not in never')
    quiet = on_tty(["--quiet"], ENV)
    expect("cases judged" not in quiet and "checking" not in quiet and "verdict: " in quiet, repr(quiet))
    piped = run(args, 0)
    expect("\x1b" not in piped.stdout + piped.stderr and "cases judged" not in piped.stderr, '"\\x1b" not in piped.stdout + piped.stderr and "cases judged" not in piped.stderr')
    always = run(args + ["--color", "always"], 0)
    expect("\x1b[32mPASS" in always.stdout and "cases judged" not in always.stderr, '"\\x1b[32mPASS" in always.stdout and "cases judged" not in always.stderr')
    run(args + ["--color", "sometimes"], 2)
    # replay shows life too.
    cases = os.path.join(source_dir, "regression", "cases")
    args = ["replay", cases, "--impl", "reference"]
    tty = on_tty([], ENV)
    expect("cases judged" in tty and "\x1b[32mPASS" in tty, repr(tty[-800:]))
    print("terminal: progress and colour on a TTY only; CI=true, NO_COLOR, --color, --quiet, pipes")

elif scenario == "help":
    for cmd in (["--help"], ["check", "--help"], ["replay", "--help"], ["list", "--help"]):
        p = run(cmd, 0)
        expect("Example" in p.stdout, (cmd, p.stdout[-500:]))
    p = run(["check", "--help"], 0)
    for flag in ("--markdown", "--skip-law", "--expect-fail", "--config", "--color", "--quiet", "ATTNCHECK_SEED",
                 "NAME=PATH"):
        expect(flag in p.stdout, flag)
    p = run(["replay", "--help"], 0)
    for flag in ("--json", "--junit", "--markdown", "PATH..."):
        expect(flag in p.stdout, flag)
    print("help: examples for every command, the new flags listed")

else:
    sys.exit(f"unknown scenario {scenario}")
