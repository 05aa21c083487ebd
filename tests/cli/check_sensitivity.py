#!/usr/bin/env python3
# `attncheck sensitivity` end to end (run by CTest with the interpreter CMake
# found; by hand: /usr/bin/python3, Debian's): the founding symptom drawn.
#   check_sensitivity.py ATTNCHECK PLUGIN_DIR OUT_DIR
# Asserts the CSV's numbers (the reference flat: ratio within the law's
# correct band 0.9..1.1 and entropy equal to exact attention's at every
# head_dim; the unscaled layer, built in and as the founding case's plugin,
# collapsing: entropy falling at every step, sensitivity down by orders of
# magnitude from head_dim 32 to 1024), the SVG well-formed (xmllint --noout)
# and labelled, both byte-identical on a second run, and the usage errors.
import csv
import os
import subprocess
import sys

attncheck, plugin_dir, out_dir = sys.argv[1:4]
os.makedirs(out_dir, exist_ok=True)
svg, csv_path = os.path.join(out_dir, "sensitivity.svg"), os.path.join(out_dir, "sensitivity.csv")
seed_layer = os.path.join(plugin_dir, "libseed_layer.so")
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def run(*args):
    return subprocess.run([attncheck, "sensitivity", *args], capture_output=True, text=True, timeout=300)


args = ["--impl", "reference", "--impl", "seed_unscaled", "--plugin", seed_layer, "--svg", svg, "--csv", csv_path]
r = run(*args)
if r.returncode != 0:
    sys.exit(f"attncheck sensitivity exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
with open(csv_path, newline="") as f:
    rows = list(csv.DictReader(f))
curves = {}
for row in rows:
    curves.setdefault(row["implementation"], []).append(row)
expect(sorted(curves) == ["reference", "seed_layer", "seed_unscaled"], f"implementations in the CSV: {sorted(curves)}")
dims = [16, 32, 64, 128, 256, 512, 1024]
for name, points in curves.items():
    expect([int(p["head_dim"]) for p in points] == dims, f"{name}: head_dims {[p['head_dim'] for p in points]}")
    expect(all(p["note"] == "" and int(p["rows"]) >= 100 for p in points), f"{name}: unmeasured points {points}")

ref = curves["reference"]
for p in ref:
    s, h, hx = float(p["query_sensitivity"]), float(p["entropy_nats"]), float(p["exact_entropy_nats"])
    expect(0.9 <= s <= 1.1, f"reference at head_dim {p['head_dim']}: sensitivity {s} outside 0.9..1.1")
    expect(abs(h - hx) < 1e-6, f"reference at head_dim {p['head_dim']}: entropy {h} vs exact {hx}")
ref_h = [float(p["entropy_nats"]) for p in ref]
expect(max(ref_h) - min(ref_h) < 0.15, f"reference entropy not flat across head_dim: {ref_h}")

for name in ("seed_unscaled", "seed_layer"):
    pts = curves[name]
    s = [float(p["query_sensitivity"]) for p in pts]
    h = [float(p["entropy_nats"]) for p in pts]
    expect(all(b < a for a, b in zip(h, h[1:])), f"{name}: entropy does not fall at every step: {h}")
    expect(h[-1] < 0.25 * min(ref_h), f"{name}: entropy at 1024 {h[-1]} has not collapsed (reference {min(ref_h)})")
    expect(all(b < a for a, b in zip(s[1:], s[2:])), f"{name}: sensitivity does not fall from head_dim 32 on: {s}")
    expect(s[-1] < 0.01 and s[-1] < s[1] / 100, f"{name}: sensitivity at 1024 {s[-1]} has not collapsed ({s})")

lint = subprocess.run(["xmllint", "--noout", svg], capture_output=True, text=True)
expect(lint.returncode == 0, f"xmllint --noout {svg}: {lint.stderr}")
with open(svg) as f:
    text = f.read()
for needle in ("reference", "seed_unscaled", "seed_layer", "head_dim (log scale)", "query sensitivity",
               "entropy of the attention weights", "exact attention", ">1024<", ">16<"):
    expect(needle in text, f"the SVG lacks '{needle}'")

with open(svg, "rb") as f:
    first_svg = f.read()
with open(csv_path, "rb") as f:
    first_csv = f.read()
again = run(*args)
expect(again.returncode == 0, f"second run exited {again.returncode}")
with open(svg, "rb") as f:
    expect(f.read() == first_svg, "the SVG differs between two runs")
with open(csv_path, "rb") as f:
    expect(f.read() == first_csv, "the CSV differs between two runs")

# Python functions through the bridge, where it is built: the NumPy reference
# flat, the founding layer ported to NumPy collapsing like seed_unscaled.
examples = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python")
if os.path.exists(os.path.join(plugin_dir, "libattncheck_python.so")):
    py_csv = os.path.join(out_dir, "python.csv")
    numpy_ref = os.path.join(examples, "numpy_attention.py") + ":attention"
    founding = os.path.join(examples, "founding_layer.py") + ":attention"
    r = run("--python", numpy_ref, "--python", founding, "--svg", os.path.join(out_dir, "python.svg"), "--csv", py_csv)
    if r.returncode != 0:
        sys.exit(f"attncheck sensitivity --python exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    with open(py_csv, newline="") as f:
        py = {}
        for row in csv.DictReader(f):
            py.setdefault(row["implementation"], []).append(row)
    expect(sorted(py) == sorted([numpy_ref, founding]), f"implementations in the Python CSV: {sorted(py)}")
    for p in py.get(numpy_ref, []):
        expect(0.9 <= float(p["query_sensitivity"]) <= 1.1, f"NumPy reference at {p['head_dim']}: {p}")
    s = [float(p["query_sensitivity"]) for p in py.get(founding, [])]
    expect(len(s) == 7 and s[-1] < 0.01, f"the NumPy founding layer's sensitivity has not collapsed: {s}")

for bad, needle in ((["--python", "m.py", "--svg", svg], "m.py"),
                    (["--python", os.path.join(out_dir, "no_such_module.py") + ":f", "--svg", svg], "no_such_module"),
                    (["--impl", "no_such_impl", "--svg", svg], "unknown implementation 'no_such_impl'"),
                    (["--impl", "reference"], "--svg"),
                    (["--plugin", os.path.join(out_dir, "missing.so"), "--svg", svg], "missing.so")):
    u = run(*bad)
    expect(u.returncode == 2, f"{bad}: exit {u.returncode}, expected 2")
    expect(needle in u.stderr, f"{bad}: stderr lacks '{needle}': {u.stderr}")

if failures:
    sys.exit("check_sensitivity: " + "\n  ".join(failures))
print("check_sensitivity: ok")
