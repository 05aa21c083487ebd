#!/usr/bin/python3
"""Issue #34, "one root cause fans out to 6 to 8 failing laws": a zoo member
that fails many laws (batch_head_swapped: the output block of (batch b, head
h) written at (batch h, head b)) checked by the program shows its failures grouped as likely
one cause, under one header line each group, the most direct law first; the
JSON report carries the groups ("failure_groups") and validates against
tests/cli/schema/report.schema.json; the JUnit report stays valid against
junit-10.xsd (when xmllint is there) and each grouped failure names the
others; the Markdown summary has its "Likely one cause" section.

Usage: failure_groups_cli.py ATTNCHECK SOURCE_DIR WORKDIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from expect import expect  # noqa: E402  (not assert: python -O strips asserts)
from json_schema import validate  # noqa: E402

attncheck, source_dir, plugin_dir, work = (os.path.abspath(a) for a in sys.argv[1:5])
os.makedirs(work, exist_ok=True)
ENV = {k: v for k, v in os.environ.items() if k not in ("CI", "NO_COLOR", "ATTNCHECK_SEED")}
KINDS = ["oracle", "exact_value", "two_calls", "process"]

paths = {f: os.path.join(work, "report." + f) for f in ("json", "xml", "md")}
p = subprocess.run([attncheck, "check", "--impl", "batch_head_swapped", "--cases", "40", "--seed", "1", "--quiet",
                    "--json", paths["json"], "--junit", paths["xml"], "--markdown", paths["md"]],
                   capture_output=True, text=True, timeout=280, env=ENV)
expect(p.returncode == 1, f"exit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-2000:]}")
out = p.stdout

with open(paths["json"]) as f:
    report = json.load(f)
with open(os.path.join(source_dir, "tests", "cli", "schema", "report.schema.json")) as f:
    schema = json.load(f)
errors = validate(report, schema)
expect(not errors, "the JSON report does not validate:\n" + "\n".join(errors[:20]))

impl = report["implementations"][0]
failed = [l["law"] for l in impl["laws"] if l["status"] == "fail"]
groups = impl.get("failure_groups", [])
expect(len(failed) >= 4, f"batch_head_swapped should fail many laws, failed {failed}")
expect(groups, f"no failure_groups for {len(failed)} failing laws: {json.dumps(impl, indent=1)[:3000]}")
biggest = max(groups, key=lambda g: len(g["laws"]))
expect(len(biggest["laws"]) >= 4, f"the fan-out is not one group: {groups}")
expect(biggest["laws"][0] == "matches_oracle", f"the most direct law is not first: {biggest['laws']}")
grouped = []
for g in groups:
    expect(all(l in failed for l in g["laws"]), f"a grouped law did not fail: {g['laws']} vs {failed}")
    ranks = [KINDS.index(k) for k in g["directness"]]
    expect(ranks == sorted(ranks), f"not most direct first: {g}")
    expect(g["same_diagnosis"] or g["same_case"], f"a group shares nothing: {g}")
    grouped += g["laws"]
expect(len(grouped) == len(set(grouped)), f"a law in two groups: {groups}")

# The console: one header line per group (wrapped at 100 columns, its
# continuation indented), the group's failures right after it in its order.
flat = re.sub(r"\n  (?=\S)", " ", out)
headers = [m.start() for m in re.finditer(r"^likely one cause \(", flat, re.M)]
expect(len(headers) == len(groups), f"{len(headers)} header lines for {len(groups)} groups:\n{out[:4000]}")
for g in groups:
    at = flat.find(f"{len(g['laws'])} failing laws of batch_head_swapped, most direct first: "
                   + ", ".join(g["laws"]) + "\n")
    expect(at >= 0, f"no header for {g['laws']}:\n{out[:4000]}")
    fails = [m.group(1) for m in re.finditer(r"^FAIL (\S+) -- ", flat[at:], re.M)][:len(g["laws"])]
    expect(fails == g["laws"], f"after its header the group prints {fails}, not {g['laws']}")

with open(paths["md"]) as f:
    md = f.read()
expect("### Likely one cause" in md, md[-2000:])
with open(paths["xml"]) as f:
    xml = f.read()
expect(xml.count("likely one cause with: ") == len(grouped), f"JUnit notes {xml.count('likely one cause with: ')}"
       f" for {len(grouped)} grouped failures")
xmllint = shutil.which("xmllint")
if xmllint:
    v = subprocess.run([xmllint, "--noout", "--schema", os.path.join(source_dir, "tests", "cli", "schema", "junit-10.xsd"),
                        paths["xml"]], capture_output=True, text=True)
    expect(v.returncode == 0, v.stderr[-2000:])
print(f"failure groups: {[g['laws'] for g in groups]}; {len(failed)} failing laws")

# The kernel: sums kept in _Float16.
narrow = os.path.join(work, "sixteen_bit_sums.json")
p = subprocess.run([attncheck, "check", "--plugin", os.path.join(plugin_dir, "sixteen_bit_sums_plugin.so"), "--cases",
                    "60", "--seed", "1", "--quiet", "--json", narrow], capture_output=True, text=True, timeout=280,
                   env=ENV)
expect(p.returncode == 1, f"exit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-2000:]}")
with open(narrow) as f:
    impl = json.load(f)["implementations"][0]
failed = [l for l in impl["laws"] if l["status"] == "fail"]
expect(len(failed) >= 4, f"the 16-bit kernel failed {[l['law'] for l in failed]}")
for l in failed:
    expect(l.get("diagnosis", "").startswith("behaves like: accumulates in 16-bit"),
           f"{l['law']}: {l.get('diagnosis')}")
groups = impl.get("failure_groups", [])
expect(len(groups) == 1 and sorted(groups[0]["laws"]) == sorted(l["law"] for l in failed), f"groups {groups}")
expect(groups[0]["laws"][0] == "matches_oracle" and groups[0]["same_diagnosis"], f"{groups[0]}")
print(f"16-bit sums: {len(failed)} failing laws, one group, each 'accumulates in 16-bit'")
