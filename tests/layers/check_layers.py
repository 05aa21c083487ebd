"""The library's layers, as docs/architecture.md states them, checked against the code.

docs/architecture.md's layer table gives each folder of src/ a layer and the folders it
includes ("may include"). This script reads every `#include "folder/..."` of src/ and fails
when a folder
  - includes a folder of its own layer or a higher one (the layering is broken), or
  - includes a folder its row does not name, or its row names a folder it does not
    include (the page is no longer true),
or when a folder of src/ has no row, or a row names no folder that exists.
`ABI` in the table stands for include/attncheck/ (`#include "attncheck/..."`).

Run by CTest (tests/layers/CMakeLists.txt) with Debian's /usr/bin/python3:
  python3 tests/layers/check_layers.py <repository root>
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from expect import expect  # noqa: E402

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
page = open(os.path.join(root, "docs", "architecture.md"), encoding="utf-8").read()

# | 3 | `src/gen/` | holds ... | problem, ABI |
row = re.compile(r"^\| *(\d+) *\| *`(?:src/([a-z_]+)/|include/attncheck/)` *\|.*\| *([^|]*?) *\|$", re.M)
layer, allowed = {}, {}
for m in row.finditer(page):
    folder = m.group(2) or "attncheck"
    layer[folder] = int(m.group(1))
    names = m.group(3).strip()
    allowed[folder] = set() if names == "nothing" else {
        ("attncheck" if n.strip() == "ABI" else n.strip().strip("`").rstrip("/")) for n in names.split(",")}
expect(len(layer) > 5, f"docs/architecture.md: found {len(layer)} layer rows; the table's format changed?")

src = os.path.join(root, "src")
folders = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
include = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/', re.M)
problems = []
for folder in folders:
    if folder not in layer:
        problems.append(f"src/{folder}/ has no row in docs/architecture.md's layer table")
        continue
    used = {}
    for dirpath, _, files in os.walk(os.path.join(src, folder)):
        for name in files:
            if not name.endswith((".h", ".cpp")):
                continue
            path = os.path.join(dirpath, name)
            for target in include.findall(open(path, encoding="utf-8").read()):
                if target != folder:
                    used.setdefault(target, os.path.relpath(path, root))
    for target, where in sorted(used.items()):
        if target not in layer:
            problems.append(f"{where} includes {target}/, which has no row in the layer table")
        elif layer[target] >= layer[folder]:
            problems.append(f"{where} includes {target}/ (layer {layer[target]}) from layer {layer[folder]}: "
                            f"a folder may include only lower layers")
        elif target not in allowed[folder]:
            problems.append(f"{where} includes {target}/, which src/{folder}/'s row does not name: "
                            f"add it to the row's 'may include' or drop the include")
    for target in sorted(allowed[folder] - set(used)):
        problems.append(f"src/{folder}/'s row says it includes {target}/, but nothing in it does: "
                        f"the page is stale")
for folder in sorted(set(layer) - set(folders) - {"attncheck"}):
    problems.append(f"docs/architecture.md has a row for src/{folder}/, which does not exist")
expect(not problems, "the layers do not hold:\n  " + "\n  ".join(problems))
print(f"layers hold: {len(folders)} folders of src/, every include goes to a lower layer the page names")
