#!/usr/bin/env python3
"""Writes the seed corpora fuzz/corpus/<target>/ (small files, committed).

The problem-taking targets first take two bytes from the FRONT of the input
(law_sweep.h, pick_pair: byte 0 picks the implementation, byte 1 the law; below
64 is matches_oracle / the first law); fuzz_overflow then takes a third, the
value mix (even: finite only). The rest is the problem: the targets decode it with fuzz/problem_decoder.cpp, which
reads with FuzzedDataProvider: integers come from the END of the input, one
after another, each big-endian in reading order. So a seed is written as the
list of bytes in reading order, reversed. Each seed below names the call it
encodes; the decoder's default caps (ATTNCHECK_FUZZ_MAX_*) must admit its shape.

Run once after changing the decoder's layout:  python3 fuzz/make_seed_corpus.py
"""
import json
import math
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")

DTYPES = {"f32": 0, "f64": 1, "f16": 2, "bf16": 3}
CAUSAL = {"none": 0, "top_left": 1, "bottom_right": 2}
MASK = {"none": 0, "bits": 1, "empty_rows": 2, "all_visible": 3}
# The palette's order in problem_decoder.cpp (index = selector & 15).
PALETTE = ["0", "min_sub", "3min_sub", "max_sub", "min_normal", "1", "0.5", "2", "1+ulp",
           "max", "max/4", "sqrt_max", "64", "1000", "inf", "nan"]
CAPS = {"batch": 2, "heads": 2, "len": 6, "dim": 6}


class Reader:
    """The bytes FuzzedDataProvider consumes, in the order it consumes them."""

    def __init__(self):
        self.out = []

    def in_range(self, lo, hi, value):
        assert lo <= value <= hi, (lo, hi, value)
        span, r, nbytes = hi - lo, value - lo, 0
        while nbytes < 8 and (span >> (8 * nbytes)) > 0:
            nbytes += 1
        self.out += list(r.to_bytes(nbytes, "big")) if nbytes else []

    def u8(self, v):
        self.in_range(0, 255, v)

    def raw(self, dtype, x):
        if dtype == "f64":
            self.out += list(struct.pack(">d", x))
        elif dtype == "f32":
            self.out += list(struct.pack(">f", x))
        elif dtype == "f16":
            self.out += list(struct.pack(">e", x))
        else:  # bf16: the top half of the f32 pattern (x must be exact in bf16)
            self.out += list(struct.pack(">f", x)[:2])

    def element(self, dtype, x):
        """x: a palette name ('-max', 'nan', ...), a small value k/8 in [-4, 3.875], or ('raw', float)."""
        if isinstance(x, tuple):
            self.u8(200)
            self.raw(dtype, x[1])
        elif isinstance(x, str):
            neg = x.startswith("-")
            self.u8(PALETTE.index(x.lstrip("-")) | (16 if neg else 0))
        else:
            k = x * 8
            assert k == int(k) and -32 <= k <= 31, x
            self.u8(128 + int(k))

    def data(self):
        return bytes(reversed(self.out))


# The ABI v2 bits (include/attncheck/plugin_v2.h): the word decode_features reads after the mask.
FEATURE = {"mask_broadcast": 1 << 0, "gqa": 1 << 2, "strides": 1 << 3, "lengths": 1 << 4, "window": 1 << 5,
           "softcap": 1 << 6, "bias": 1 << 7, "alibi": 1 << 8, "sinks": 1 << 9, "lse": 1 << 10}


def problem(dtype="f32", batch=1, heads=1, q_len=2, kv_len=2, head_dim=2, value_dim=2, causal="none",
            scale=None, mask="none", q=None, k=None, v=None, mask_bytes=(), v2=None, grad=None):
    """Bytes for one call. scale: None (default) or a selector 128..255 (see scale_of).
    q, k, v: functions n -> element (see Reader.element), or lists cycled to the size.
    v2: None (a v1 call), or (features, items): the names of FEATURE present and, in the
    order decode_features reads them, its bytes (ints) and elements (("e", x), see Reader.element;
    bias elements in the call's dtype, slopes and sinks in f32).
    grad: None (a forward call), or (dout, padding, views, view_bytes) for decode_backward_problem:
    dout elements (cycled to [batch][heads][q_len][value_dim]), the padding selector (0 decoded,
    1 NaN, 2 +max, 3 -max), the views selector (0 dense, 1 like q, 2 each its own, 3 like the
    forward views) and, for 2, the 16 bytes of the dout, dq, dk, dv layouts."""
    r = Reader()
    r.in_range(0, 3, DTYPES[dtype])
    r.in_range(1, CAPS["batch"], batch)
    r.in_range(1, CAPS["heads"], heads)
    r.in_range(1, CAPS["len"], q_len)
    r.in_range(1, CAPS["len"], kv_len)
    r.in_range(1, CAPS["dim"], head_dim)
    r.in_range(1, CAPS["dim"], value_dim)
    r.in_range(0, 2, CAUSAL[causal])
    if scale is None:
        r.u8(0)
    elif isinstance(scale, tuple):  # ('raw', x): selector 137 (137 % 10 == 7), then the bits
        r.u8(137)
        r.raw(dtype, scale[1])
    else:
        r.u8(scale)
    r.in_range(0, 3, MASK[mask])
    bh = batch * heads
    for values, n in ((q, bh * q_len * head_dim), (k, bh * kv_len * head_dim), (v, bh * kv_len * value_dim)):
        values = values or [1, 0.5, -1, 0, 2, -0.25, 0.125]
        for i in range(n):
            r.element(dtype, values[i % len(values)])
    for b in mask_bytes:
        r.u8(b)
    if v2 is not None:
        names, items = v2
        r.in_range(0, 65535, sum(FEATURE[n] for n in names))
        for item in items:
            if isinstance(item, tuple):
                r.element(item[1], item[2])  # ("e", dtype, value)
            else:
                r.u8(item)
    if grad is not None:
        if v2 is None:
            r.in_range(0, 65535, 0)  # no v2 field
        dout, padding, views, view_bytes = grad
        for i in range(bh * q_len * value_dim):
            r.element(dtype, dout[i % len(dout)])
        r.u8(padding)
        r.u8(views)
        for b in view_bytes:
            r.u8(b)
    return r.data()


def picked(seeds, mix=None):
    """Prefixes each seed with its pick bytes, spreading the seeds over implementations and laws."""
    out = {}
    for n, (name, data) in enumerate(seeds.items()):
        law = 0 if n % 3 == 0 else 64 + (n * 37) % 192
        prefix = bytes([n % 3, law]) + (b"" if mix is None else bytes([mix[name]]))
        out[name] = prefix + data
    return out


def differential_seeds():
    return {
        "f32_small": problem(),
        "f64_top_left_mask": problem("f64", q_len=4, kv_len=4, head_dim=3, value_dim=2, causal="top_left",
                                     mask="bits", mask_bytes=[0b10110111, 0b11101101]),
        "f16_bottom_right_empty_rows": problem("f16", q_len=5, kv_len=3, causal="bottom_right"),
        "bf16_huge_logits_scale1": problem("bf16", q_len=3, kv_len=5, head_dim=4, value_dim=1, scale=131,
                                           q=["1000", "-64", "2"], k=["64", "1", "-1000"]),
        "f32_nan_inf": problem(q=["nan", 1, 2], k=[1, -1], v=["inf", 0.5, "-inf"]),
        "f32_subnormals": problem(head_dim=3, q=["min_sub", "-max_sub", "min_normal"],
                                  k=["3min_sub", 1, "-min_sub"]),
        "f64_raw_bits": problem("f64", batch=2, heads=2, q_len=3, kv_len=4, head_dim=2, value_dim=3,
                                q=[("raw", 0.1), ("raw", -3.7e5), ("raw", 2.0 ** -1030)],
                                k=[("raw", 1e-3), ("raw", 12.5)], v=[("raw", math.pi), ("raw", -1e300)]),
        "f16_explicit_raw_scale": problem("f16", q_len=4, kv_len=6, head_dim=5, value_dim=6,
                                          scale=("raw", 0.01171875), mask="empty_rows",
                                          mask_bytes=[0x01, 0xfe, 0x54, 0x00]),
        "empty": b"",
        # ABI v2 (decoded only for implementations that declare the features; neutral otherwise):
        # 2 heads over 1 kv head, BSHD q and out with odd gaps, kv_lens {3, 0} with NaN padding, lse.
        "v2_gqa_bshd_lengths": problem("f32", batch=2, heads=2, q_len=3, kv_len=4, head_dim=2, value_dim=3,
                                       v2=(["gqa", "strides", "lengths", "lse"],
                                           [0,                      # gqa: the first proper divisor, 1
                                            1, 0, 0, 1,  2, 0, 3, 0,  0, 0, 0, 0,  1, 7, 1, 0,  # q, k, v, out
                                            2, 3, 0, 1])),          # kv_lens only: 3, 0; padding NaN
        # A bias broadcast over heads with -inf, a window of 1 left and 2 right, a soft-cap of 5, ALiBi.
        "v2_bias_window_softcap_alibi": problem("f64", heads=2, q_len=3, kv_len=5, causal="bottom_right",
                                                v2=(["window", "softcap", "bias", "alibi"],
                                                    [2, 3,                      # window 1, 2
                                                     4,                         # softcap 5
                                                     0b101]                     # bias per batch and row
                                                    + [("e", "f64", x) for x in
                                                       ["-inf", 0.5, -1, 2, 0] * 3]
                                                    + [0])),                    # ALiBi: the 2^(-8k/H) family
        # Sinks far above and below the logits, a broadcast mask, causal top-left, bf16.
        "v2_sinks_mask_broadcast": problem("bf16", heads=2, q_len=2, kv_len=3, causal="top_left", mask="bits",
                                           mask_bytes=[0b10110111, 0b01101101],
                                           v2=(["mask_broadcast", "sinks"],
                                               [0b010]                          # the mask varies by head only
                                               + [("e", "f32", "1000"), ("e", "f32", "-64")])),
    }


def gradient_seeds():
    """Backward problems (fuzz_gradients): the forward calls of differential_seeds' kind, then dout."""
    return {
        "f32_small": problem(grad=([1, -0.5, 2, 0.25], 0, 0, [])),
        "f64_top_left_mask": problem("f64", q_len=4, kv_len=4, head_dim=3, value_dim=2, causal="top_left",
                                     mask="bits", mask_bytes=[0b10110111, 0b11101101],
                                     grad=([0.5, -1, 0, 3, -0.125], 0, 0, [])),
        # Rows that see no key (their dq must be zero), a zero row of dout.
        "f16_empty_rows": problem("f16", q_len=4, kv_len=3, mask="empty_rows", mask_bytes=[0x01, 0xfe, 0x54, 0x00],
                                  grad=([0, 0, 1, -2, 0.25, 0.75], 0, 0, [])),
        "bf16_huge_logits": problem("bf16", q_len=3, kv_len=5, head_dim=4, value_dim=1, scale=131,
                                    q=["1000", "-64", "2"], k=["64", "1", "-1000"], grad=(["64", -1, "0.5"], 0, 0, [])),
        # 2 heads over 1 kv head, strided forward views, kv_lens {3, 0}; dout's gradient views each
        # its own (dout BSHD with a row gap, dq with odd gaps, dk and dv in other orders).
        "v2_gqa_bshd_lengths_own_views": problem(
            "f32", batch=2, heads=2, q_len=3, kv_len=4, head_dim=2, value_dim=3,
            v2=(["gqa", "strides", "lengths", "lse"],
                [0, 1, 0, 0, 1, 2, 0, 3, 0, 0, 0, 0, 0, 1, 7, 1, 0,
                 3, 2, 1, 3, 0, 1]),  # q_lens {2, 1} and kv_lens {3, 0}; padding NaN
            grad=([1, -0.5, 0.25, 2, "-1"], 1, 2, [1, 0, 0, 3,  0, 1, 3, 5,  5, 0, 2, 0,  2, 7, 0, 0])),
        # A bias, a window, a soft-cap of 5 and ALiBi; gradient views like the forward ones (none strided here).
        "v2_bias_window_softcap_alibi": problem("f64", heads=2, q_len=3, kv_len=5, causal="bottom_right",
                                                v2=(["window", "softcap", "bias", "alibi"],
                                                    [2, 3, 4, 0b101]
                                                    + [("e", "f64", x) for x in ["-inf", 0.5, -1, 2, 0] * 3]
                                                    + [0]),
                                                grad=([0.5, -2, 1, 0.125], 0, 3, [])),
        # Sinks far from the logits, q_lens {1} with huge padding in dout, every gradient view like q's (BSHD).
        "v2_sinks_lengths_views_like_q": problem("bf16", heads=2, q_len=3, kv_len=3,
                                                 v2=(["strides", "lengths", "sinks"],
                                                     [1, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 0,  1, 0, 0, 0,
                                                      1, 1, 2]  # q_lens {1}; padding +max
                                                     + [("e", "f32", "1000"), ("e", "f32", "-64")]),
                                                 grad=([1, -1, 0.5], 2, 1, [])),
        "empty": b"",
    }


def overflow_seeds():
    return {
        "f32_max_values": problem(v=["max", "-max", "max/4"]),
        "f16_sqrt_max_logits": problem("f16", q_len=3, kv_len=4, head_dim=4,
                                                q=["sqrt_max", "-sqrt_max"], k=["sqrt_max", 1]),
        "bf16_max_logits_scale16": problem("bf16", head_dim=6, scale=136, q=["max"], k=["max", "-max"]),
        "f64_empty_rows_mask": problem("f64", q_len=4, kv_len=3, mask="empty_rows",
                                                mask_bytes=[0x01, 0xff, 0x01, 0x02]),
        "f32_nan_visible": problem(q_len=3, kv_len=3, causal="top_left",
                                              q=[1, 2, "nan", 0.5], k=[1, "nan", 0], v=[1, 2, 3, "nan"]),
        "f16_inf_values": problem("f16", v=["inf", "-inf", 1]),
        "f32_subnormal_sums": problem(kv_len=6, head_dim=6, q=["min_sub"], k=["-3min_sub", "max_sub"],
                                               v=["min_sub", "-min_sub"]),
        "f64_bottom_right_no_keys": problem("f64", q_len=6, kv_len=2, causal="bottom_right",
                                                     v=["max", "1000"]),
    }


def case_file(dtype="f32", shape=(1, 1, 2, 2, 2, 1), causal="none", scale="default", q=None, k=None, v=None,
              mask=None, law="matches_oracle"):
    b, h, ql, kl, d, dv = shape
    return {
        "schema_version": 1,
        "law": law,
        "problem": {
            "dtype": dtype, "batch": b, "heads": h, "q_len": ql, "kv_len": kl, "head_dim": d, "value_dim": dv,
            "causal": causal, "scale": scale,
            "q": q if q is not None else ["0x1p+0"] * (b * h * ql * d),
            "k": k if k is not None else ["-0x1.8p+1"] * (b * h * kl * d),
            "v": v if v is not None else ["0x1p-2"] * (b * h * kl * dv),
            "mask": mask,
        },
        "history": {"implementation": "seed_unscaled", "source": "builtin:seed_unscaled", "seed": 42,
                    "found_by": "rapidcheck", "message": "seed case", "diagnosis": "",
                    "date": "2025-01-31T12:00:00Z"},
    }


def schema2_case(**changes):
    """A schema-2 case using every v2 field (casefile/case_file.h); `changes` replace problem fields."""
    case = case_file(shape=(1, 4, 2, 3, 1, 1), q=["0x1p+0"] * 8, k=["0x1p-1"] * 6, v=["-0x1p+0"] * 6,
                     mask="101")
    case["schema_version"] = 2
    case["problem"].update({
        "kv_heads": 2, "mask_broadcast": {"per_batch": False, "per_head": False, "per_row": False},
        "bias": ["-inf", "0x1p-1", "0x0p+0"], "bias_broadcast": {"per_batch": False, "per_head": False, "per_row": False},
        "q_lens": [1], "kv_lens": [2], "window_left": 1, "window_right": -1, "softcap": 30.0,
        "alibi_slopes": ["0x1p-2", "0x1p-4", "0x1p-6", "0x1p-8"], "sinks": ["0x0p+0", "-0x1p+3", "0x1p+6", "0x1p+0"],
        "lse_requested": True,
        "layouts": {"q": {"order": ["batch", "row", "head"], "gap": {"batch": 0, "head": 0, "row": 3}},
                    "k": {"order": ["row", "batch", "head"], "gap": {"batch": 1, "head": 0, "row": 0}},
                    "v": {"order": ["batch", "head", "row"], "gap": {"batch": 0, "head": 17, "row": 0}},
                    "out": {"order": ["head", "row", "batch"], "gap": {"batch": 2, "head": 2, "row": 2}}},
    })
    case["problem"].update(changes)
    return case


def case_file_seeds():
    text = lambda obj: json.dumps(obj, indent=1).encode()
    good = case_file()
    seeds = {
        "good_minimal.json": text(good),
        "good_mask_causal.json": text(case_file("f64", (1, 2, 2, 3, 1, 2), "bottom_right", "0x1p-1",
                                                mask="101110011011", law="causal_prefix_consistency")),
        "good_special_values.json": text(case_file("f16", (1, 1, 1, 2, 2, 2), "top_left", "0x1p+0",
                                                   q=["nan", "-0x0p+0"], k=["inf", "-inf", "-nan", "0x1p-24"],
                                                   v=[1, 0.5, "-2", "0x1.ffcp+15"])),
        "good_bf16_numbers.json": text(case_file("bf16", (1, 1, 1, 1, 1, 1), q=[0.5], k=[-3], v=[256])),
        "bad_truncated.json": text(good)[:150],
        "bad_length.json": text(case_file(q=["0x1p+0"] * 3)),
        "bad_huge_shape.json": text(case_file(shape=(1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20),
                                              q=[], k=[], v=[])),
        "bad_negative_extent.json": text(case_file(shape=(1, -1, 2, 2, 2, 1))),
        "bad_not_representable.json": text(case_file("f16", q=["0x1.0000001p+0"] * 4)),
        "bad_schema.json": text(dict(good, schema_version=3)),
        "good_schema2_every_field.json": text(schema2_case()),
        "bad_schema2_kv_heads.json": text(schema2_case(kv_heads=3)),
        "bad_schema2_layout.json": text(schema2_case(layouts={"q": {"order": ["batch", "row", "row"]}})),
        # A backward problem (dout [1][4][2][1], q_lens {1}: rows 1 are padding) and strided gradient views.
        "good_schema2_backward.json": text(schema2_case(
            dout=["0x1p+0", "nan", "-0x1p-1", "nan", "0x0p+0", "nan", "0x1.8p+1", "nan"],
            layouts=dict(schema2_case()["problem"]["layouts"],
                         dout={"order": ["batch", "row", "head"], "gap": {"batch": 0, "head": 1, "row": 0}},
                         dq={"order": ["head", "batch", "row"], "gap": {"batch": 0, "head": 0, "row": 5}},
                         dk={"order": ["batch", "head", "row"], "gap": {"batch": 3, "head": 0, "row": 0}},
                         dv={"order": ["row", "head", "batch"], "gap": {"batch": 0, "head": 2, "row": 1}}))),
        "bad_schema2_dout_length.json": text(schema2_case(dout=["0x1p+0"] * 7)),
        "bad_not_json.json": b"{\"law\": [1, 2, {\"q\": nul",
    }
    return seeds


def problem_dictionary():
    """Raw bit patterns of edge values, as they sit in an input: the pattern
    little-endian (reversed reading order), followed by the raw selector 200."""
    specials = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan, "one": 1.0, "-zero": -0.0}
    lines = ["# Edge values as raw dtype bit patterns followed by the raw-value selector (200 = 0xc8).",
             "# Written by fuzz/make_seed_corpus.py."]
    for dtype in ("f64", "f32", "f16"):
        for name, x in specials.items():
            r = Reader()
            r.u8(200)
            r.raw(dtype, x)
            lines.append(f'{dtype}_{name.replace("-", "neg_")}="' + "".join(f"\\x{b:02x}" for b in r.data()) + '"')
    for name, bits in {"f32_max": 0x7f7fffff, "f32_min_sub": 0x00000001, "f16_max": 0x7bff, "f16_min_sub": 0x0001,
                       "bf16_max": 0x7f7f, "bf16_min_normal": 0x0080}.items():
        width = 4 if name.startswith("f32") else 2
        lines.append(f'{name}="' + "".join(f"\\x{b:02x}" for b in bits.to_bytes(width, "little") + b"\xc8") + '"')
    return "\n".join(lines) + "\n"


def case_file_dictionary():
    keys = ["schema_version", "law", "problem", "dtype", "batch", "heads", "q_len", "kv_len", "head_dim",
            "value_dim", "causal", "scale", "q", "k", "v", "mask", "history", "implementation", "source", "seed",
            "found_by", "message", "diagnosis", "date", "kv_heads", "mask_broadcast", "bias", "bias_broadcast",
            "per_batch", "per_head", "per_row", "q_lens", "kv_lens", "window_left", "window_right", "softcap",
            "alibi_slopes", "sinks", "lse_requested", "layouts", "order", "gap", "out", "row", "head",
            "dout", "dq", "dk", "dv"]
    words = ["f32", "f64", "f16", "bf16", "none", "top_left", "bottom_right", "default", "nan", "-nan", "inf",
             "-inf", "0x1p+0", "-0x0p+0", "0x1.8p+1", "0x1p-1074", "0x1.fffffffffffffp+1023", "0x1p-24",
             "builtin:reference", "plugin:/p.so", "libfuzzer", "rapidcheck", "manual", "matches_oracle", "1011",
             "2025-01-31T12:00:00Z"]
    tokens = ["{", "}", "[", "]", ":", ",", "null", "true", "false", "-1", "0", "1", "1e308", "4294967296",
              "9223372036854775807", "1.5", "\\\\u0000", "\\\""]
    lines = ["# Keys and words of a case file (src/casefile/case_file.h). Written by fuzz/make_seed_corpus.py."]
    lines += [f'key_{k}="\\"{k}\\":"' for k in keys]
    lines += [f'word_{n}="\\"{w}\\""' for n, w in enumerate(words)]
    lines += [f'token_{n}="{t}"' for n, t in enumerate(tokens)]
    return "\n".join(lines) + "\n"


def write(target, seeds):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        os.remove(os.path.join(folder, name))
    for name, data in seeds.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    print(f"{target}: {len(seeds)} seeds, {sum(map(len, seeds.values()))} bytes")


def main():
    write("fuzz_differential", picked(differential_seeds()))
    write("fuzz_plugin", picked({k: v for k, v in differential_seeds().items() if k != "f64_raw_bits"}))
    overflow = overflow_seeds()
    write("fuzz_overflow", picked(overflow, {k: 1 if ("nan" in k or "inf" in k) else 0 for k in overflow}))
    write("fuzz_gradients", picked(gradient_seeds()))
    write("fuzz_case_file", case_file_seeds())
    os.makedirs(os.path.join(HERE, "dicts"), exist_ok=True)
    for name, text in (("problem.dict", problem_dictionary()), ("case_file.dict", case_file_dictionary())):
        with open(os.path.join(HERE, "dicts", name), "w") as f:
            f.write(text)
        print(f"dicts/{name}: {text.count(chr(10))} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
