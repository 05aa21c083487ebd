#!/usr/bin/python3
"""Keeps docs/case-files.md true: every field a case file can hold appears in the
first column of one of its tables, and every name there is a field.

The fields are read from what writes them, not from a copy:
  - the field lists (src/problem/problem_fields.h): every field<&T::m>("name", ...)
    of Problem, Shape, Broadcast, TensorLayout and ViewLayouts;
  - the writer of the top level and "history" (src/casefile/case_json.cpp): every
    \\"key\\": it writes;
  - the golden files (tests/casefile/golden/*.json): every key, at any depth.

Usage: doc_fields.py SOURCE_DIR   (exit 0: the doc is complete; 1: it names what is missing)
"""
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from expect import expect  # noqa: E402  (not assert: python -O strips asserts)

root = os.path.abspath(sys.argv[1])


def read(*parts):
    with open(os.path.join(root, *parts), encoding="utf-8") as f:
        return f.read()


listed = set(re.findall(r'field<&\w+::\w+>\("(\w+)"', read("src", "problem", "problem_fields.h")))
# "shape" is a field of the list whose members are the file's keys: it is no key itself.
listed.discard("shape")
written = set(re.findall(r'\\"(\w+)\\": ', read("src", "casefile", "case_json.cpp")))


def keys(value, out):
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(k)
            keys(v, out)
    elif isinstance(value, list):
        for v in value:
            keys(v, out)
    return out


golden = set()
golden_files = sorted(glob.glob(os.path.join(root, "tests", "casefile", "golden", "*.json")))
for path in golden_files:
    with open(path, encoding="utf-8") as f:
        keys(json.load(f), golden)

# Each source must have been read: a pattern that stopped matching would pass vacuously.
expect(len(listed) >= 30 and {"dtype", "q", "softcap", "per_row", "order", "dq"} <= listed,
       f"the field lists' names were not found in problem_fields.h: {sorted(listed)}")
expect({"schema_version", "law", "expect", "problem", "history", "source", "seed", "date"} <= written,
       f"the writer's keys were not found in case_json.cpp: {sorted(written)}")
expect(len(golden_files) >= 3 and "kv_heads" in golden, f"golden files not read: {golden_files}")

doc = read("docs", "case-files.md")
documented = set()
for line in doc.splitlines():
    if line.startswith("|") and not line.startswith("|---"):
        first = line.split("|")[1]
        documented |= set(re.findall(r"`(\w+)`", first))

every = listed | written | golden
missing = sorted(every - documented)
expect(not missing, f"docs/case-files.md's tables do not describe {missing} (from the field lists, "
                    "case_json.cpp's writer or the golden files): add a row for each")
stale = sorted(documented - every - {"schema_version"})
expect(not stale, f"docs/case-files.md's tables describe {stale}, which no case file holds")
print(f"docs/case-files.md describes all {len(every)} fields")
