"""Issue #34, reading a failure: a law that builds its own problem prints and saves the call
that failed, and how it was derived, not the drawn case ("mask=none").

For zoo members failing masked_keys_ignored (a call with keys hidden by an added mask) and the
weight laws (V = identity): the console and the JUnit failure print "failing call (ROLE):
DERIVATION" and that call, the JSON report lists the law's failing_calls, the saved case file holds the derived call with
history.derivation, and replaying it fails the same law with the same message; a weight law's
V = identity call saved under matches_oracle (a law that judges that single call) fails too.

Run by CTest (tests/cli/CMakeLists.txt) with Debian's /usr/bin/python3:
  python3 derived_cli.py <attncheck> <work dir>
"""
import glob
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from expect import expect  # noqa: E402
from json_schema import validate  # noqa: E402

attncheck, work = sys.argv[1], sys.argv[2]
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "schema", "report.schema.json")) as f:
    schema = json.load(f)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def run(*args):
    return subprocess.run([attncheck, *args], capture_output=True, text=True, timeout=300, cwd=work)


def identity_values(problem):
    n, dv = problem["kv_len"], problem["value_dim"]
    v = [float.fromhex(x) if x.startswith(("0x", "-0x")) else float(x) for x in problem["v"]]
    rows = problem["batch"] * problem.get("kv_heads", problem["heads"])
    return all(v[(r * n + j) * dv + c] == (1.0 if c == j else 0.0)
               for r in range(rows) for j in range(n) for c in range(dv))


def weights_call(p):
    return p["value_dim"] == p["kv_len"] and identity_values(p)


# (member, law, what the saved call must show, jobs, the call alone fails): --jobs 2 carries the
# calls over the worker wire. masked_keys_ignored's failure is a pair: its masked call alone is right.
for member, law, derived, jobs, alone in [
        ("causal_off_by_one", "masked_keys_ignored", lambda p: p["mask"] is not None, "1", False),
        ("causal_off_by_one", "masked_weights_zero", weights_call, "2", True),
        ("kv_swapped", "weights_sum_to_one", weights_call, "1", True)]:
    where = f"{member}/{law}"
    cases = os.path.join(work, f"{member}-{law}")
    report = os.path.join(work, f"{member}-{law}.json")
    r = run("check", "--impl", member, "--law", law, "--seed", "1", "--jobs", jobs, "--save-failures", cases,
            "--json", report, "--junit", report + ".xml")
    expect(r.returncode == 1, f"{where}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    expect("  failing call (" in r.stdout, f"{where}: the console names no failing call\n{r.stdout}")
    junit = open(report + ".xml").read()
    expect("failing call (" in junit, f"{where}: the JUnit failure names no failing call\n{junit}")

    errors = validate(json.load(open(report)), schema)
    expect(not errors, f"{where}: the JSON report does not validate:\n" + "\n".join(errors[:20]))
    laws = json.load(open(report))["implementations"][0]["laws"]
    failing = [l for l in laws if l["law"] == law][0]
    calls = failing.get("failing_calls", [])
    expect(calls and calls[0]["derivation"].startswith("the case with") and calls[0]["call"],
           f"{where}: failing_calls {calls}")
    expect(calls[0]["derivation"] in r.stdout, f"{where}: the console lacks {calls[0]['derivation']!r}")

    [saved] = glob.glob(os.path.join(cases, "*.json"))
    case = json.load(open(saved))
    expect(derived(case["problem"]), f"{where}: the saved problem is not the derived call: {case['problem']}")
    expect(case["history"].get("derivation", "").startswith("the call that failed ("), f"{where}: {case['history']}")

    replay = run("replay", saved, "--json", report + ".replay")
    expect(replay.returncode == 1, f"{where}: replaying {saved}: exit {replay.returncode}\n{replay.stdout}")
    [again] = json.load(open(report + ".replay"))["implementations"][0]["laws"]
    expect(again["status"] == "fail" and again["message"] == failing["message"],
           f"{where}: replayed {again}, found {failing['message']!r}")

    if not alone:
        continue
    # The derived call alone, under a law that judges one call: the implementation is wrong on it.
    case["law"] = "matches_oracle"
    single = os.path.join(work, f"{member}-{law}-single.json")
    json.dump(case, open(single, "w"))
    one = run("replay", single)
    expect(one.returncode == 1 and "FAIL" in one.stdout, f"{where}: matches_oracle on the saved call\n{one.stdout}")
print("derived calls printed, reported, saved and replayed")
