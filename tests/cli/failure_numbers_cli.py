"""Issue #34, reading a failure: numbers and shrunk cases a user can read.

  compared-values   zoo members whose failure messages printed two different values alike
                    ("unshifted = 0.940251, shifted by 851.739 = 0.940251", "keys in order =
                    2.00007, keys permuted = 2.00007"): every "A = x, B = y" pair of a message
                    now prints differently, with the distance in ulps of the dtype.
  shrunk-values     a zoo member's shrunk cases keep few nonzero values (shrinking zeroes
                    blocks and single elements, then rounds them to integers), and the console
                    shows the shrunk tensors in decimal, a large one by its named extents and
                    its nonzero elements, never "(238 elements)".

Run by CTest (tests/cli/CMakeLists.txt) with Debian's /usr/bin/python3:
  python3 failure_numbers_cli.py <attncheck> <scenario> <work dir>
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from expect import expect  # noqa: E402

attncheck, scenario, work = sys.argv[1], sys.argv[2], sys.argv[3]


def check(*args):
    r = subprocess.run([attncheck, "check", "--quiet", "--jobs", "1", *args], capture_output=True, text=True,
                       timeout=300)
    expect(r.returncode == 1, f"{args}: exit {r.returncode}, expected a failure (1)\n{r.stdout}\n{r.stderr}")
    return r.stdout


def messages(out):
    return [line.split("message:", 1)[1].strip() for line in out.splitlines() if line.strip().startswith("message:")]


if scenario == "compared-values":
    # (member, law, seed): each printed a pair alike before issue #34.
    runs = [("causal_off_by_one", "logit_shift_invariance", "1"),
            # seed 2: at seed 1 issue #33's draws no longer fail this law on this member
            ("batch_head_swapped", "key_permutation_invariance", "2"),
            ("batch_head_swapped", "logit_shift_invariance", "1")]
    for member, law, seed in runs:
        msgs = messages(check("--impl", member, "--law", law, "--seed", seed))
        expect(len(msgs) == 1, f"{member}/{law}: one failure message expected, got {msgs}")
        m = msgs[0]
        # "<name> = <x>, <name> = <y>: <n> ulp (<dtype>)"
        pair = re.search(r"worst \[[^\]]*\](?:\[[^\]]*\])*: (.+?) = ([^,\s]+), (.+?) = ([^,:\s]+)", m)
        expect(pair is not None, f"{member}/{law}: no compared pair in: {m}")
        x, y = pair.group(2), pair.group(4)
        expect(x != y, f"{member}/{law}: two different values printed alike ({x}, {y}): {m}")
        expect(float(x) != float(y), f"{member}/{law}: the texts read back as one value: {m}")
        ulps = re.match(r": ([0-9.e+]+) ulp \((f32|f64|f16|bf16)\)", m[pair.end():])
        expect(ulps is not None, f"{member}/{law}: no distance in ulps after the pair: {m}")
        expect(float(ulps.group(1)) > 0, f"{member}/{law}: a failure of 0 ulp: {m}")
    print("compared values print apart, with their distance in ulps")

elif scenario == "shrunk-values":
    cases = os.path.join(work, "shrunk-values")
    shutil.rmtree(cases, ignore_errors=True)
    # last_key_dropped's scale_invariance at seed 1 shrank to 3058 values, 2894 of them nonzero,
    # and printed "q = (128 elements)"-style lines; its other failures kept up to 144 nonzero.
    # --shrink-seconds 600: the shrinking runs to its end on any machine. At the default 10 s
    # per law, the asan build on a loaded machine stopped scale_invariance's search early
    # (1470 of 3058 values nonzero): the shrunk case is the search's, not the clock's.
    out = check("--impl", "last_key_dropped", "--seed", "1", "--law", "scale_invariance", "--law",
                "logit_shift_invariance", "--law", "default_scale_is_inverse_sqrt_d", "--save-failures", cases,
                "--shrink-seconds", "600")
    saved = sorted(glob.glob(os.path.join(cases, "*.json")))
    # scale_invariance (the one that shrank to 3058 values) and logit_shift_invariance fail at
    # seed 1; default_scale_is_inverse_sqrt_d did too before issue #33's draws moved (it still
    # fails at seed 2). Every case saved must be small.
    names = sorted(os.path.basename(x).split("-")[0] for x in saved)
    expect({"scale_invariance", "logit_shift_invariance"} <= set(names), f"saved cases: {saved}\n{out}")
    for path in saved:
        p = json.load(open(path))["problem"]
        values = [float.fromhex(x) for t in ("q", "k", "v") for x in p[t]]
        nonzero = [x for x in values if x != 0]
        # A handful per tensor: 16 (issue #33's draws give scale_invariance at seed 1 a case of
        # head_dim 72 that shrinks to 13 of 297 nonzero, 5 of them in q; the fault this guards
        # against left 2894 of 3058).
        expect(len(nonzero) <= 16, f"{os.path.basename(path)}: {len(nonzero)} of {len(values)} values nonzero")
        expect(all(x == int(x) for x in nonzero), f"{os.path.basename(path)}: non-integer values {nonzero}")
        # The case file keeps the exact hex floats.
        expect(all(x.startswith(("0x", "-0x")) for x in p["q"]), f"{os.path.basename(path)}: q not hex floats")
    expect(re.search(r"= \(\d+ elements\)", out) is None, f"a tensor shown by its size alone:\n{out}")
    expect(re.search(r"\bq = \[\[", out) is not None, f"no decimal q in the console:\n{out}")
    big = re.search(r"\b([qkv]) = \[batch=\d+, (kv_)?heads=\d+, (q|kv)_len=\d+, (head|value)_dim=\d+\], "
                    r"(\d+) elements, (\d+) nonzero:\n((?:\s+[qkv]\[\d+, \d+, \d+, \d+\] = -?\d+(\.\d+)?\n)+)", out)
    expect(big is not None, f"no large tensor shown by its extents and nonzero elements:\n{out}")
    listed = re.findall(r"\[\d+, \d+, \d+, \d+\] = ", big.group(7))
    expect(len(listed) == int(big.group(6)), f"{big.group(6)} nonzero, {len(listed)} listed:\n{big.group(0)}")
    print(f"shrunk cases keep few nonzero values ({[os.path.basename(s) for s in saved]}), shown in decimal")

else:
    expect(False, f"unknown scenario {scenario}")
