#!/usr/bin/python3
"""Prints the zoo tables of docs/zoo.md (markdown) from one `attncheck check --json` run;
the README shows the first of them, the forward table of the ABI v1 members.

Usage (from the repository root, after building):
    /usr/bin/python3 docs/zoo_table.py [build/attncheck] [--seed 20261130] [--json REPORT] [--first]

--first prints only the first table, the one the README shows.

--json REPORT reads a report that `attncheck check --seed S --json REPORT` already
wrote instead of running the check (the binary still answers `attncheck list`).

The references and the ABI v1 zoo members make the first table, the references
and the ABI v2 zoo members (those that declare a feature beyond masks and
causal rules) the second, both over the forward laws; the references and the
zoo's backward members (a correct forward, one backward fault) the third, over
the gradient laws (those `attncheck list` says need "backward"). Each cell is what the console prints: PASS n, FAIL n,
INSUF n, skip, or - for a law the implementation did not run (an opt-in law
the embedded default runs only for the zoo member whose row pins it).
"""
import json
import subprocess
import sys
import tempfile

binary = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else "build/attncheck"
seed = "20261130"
if "--seed" in sys.argv:
    seed = sys.argv[sys.argv.index("--seed") + 1]

if "--json" in sys.argv:
    report = json.load(open(sys.argv[sys.argv.index("--json") + 1]))
else:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([binary, "check", "--seed", seed, "--json", out.name], stdout=subprocess.DEVNULL, check=False)
        report = json.load(open(out.name))

listing = subprocess.run([binary, "list"], capture_output=True, text=True, check=True).stdout
impls = report["implementations"]
REFERENCES = ["reference", "naive", "online"]
# v2 members: built-ins `attncheck list` marks "[ABI v2: ...]".
v2_names = {line.split()[0] for line in listing.splitlines() if "[ABI v2" in line}
# Built-ins with a backward ("; backward]") and the laws that need one ("needs ...backward]").
backward_names = {line.split()[0] for line in listing.splitlines() if "; backward]" in line}
gradient_laws = {line.split()[0] for line in listing.splitlines() if "backward]" in line and "needs" in line}


def cell(law):
    status = law["status"]
    if status == "pass":
        return f"PASS {law['judged']}"
    if status == "fail":
        return f"FAIL {law['judged']}"
    if status == "insufficient":
        return f"INSUF {law['judged']}"
    return "skip"


def table(names, gradients):
    chosen = [i for i in impls if i["name"] in names]
    # Every law any of them ran, in the order they ran it: the catalogue's, then
    # a zoo member's pinned opt-in laws (nan_propagates), run for it alone;
    # "-" where an implementation did not run the law, as the console prints.
    laws = []
    for i in chosen:
        laws += [l["law"] for l in i["laws"] if l["law"] not in laws]
    rows = ["| law | " + " | ".join(i["name"] for i in chosen) + " |",
            "|---|" + "---|" * len(chosen)]
    for law in laws:
        if (law in gradient_laws) == gradients:
            cells = [next((cell(l) for l in i["laws"] if l["law"] == law), "-") for i in chosen]
            rows.append(f"| {law} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


v1 = REFERENCES + [i["name"] for i in impls if i["name"] not in REFERENCES and i["name"] not in v2_names]
members = [i["name"] for i in impls if i["name"] not in REFERENCES]
v2 = REFERENCES + [n for n in members if n in v2_names and n not in backward_names]
backward = REFERENCES + [n for n in members if n in backward_names]
print(table(v1, False))
if "--first" not in sys.argv:
    print()
    print(table(v2, False))
    print()
    print(table(backward, True))
