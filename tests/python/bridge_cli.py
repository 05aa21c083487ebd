#!/usr/bin/env python3
"""The Python bridge through the CLI, one scenario per CTest (tests/python/CMakeLists.txt).
Run with Debian's /usr/bin/python3 (any python3 works: this script only runs attncheck).

    bridge_cli.py ATTNCHECK SCENARIO REPO_ROOT WORK_DIR
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from expect import expect  # noqa: E402  (not assert: python -O strips asserts)

attncheck, scenario, root, work = sys.argv[1:5]
fixtures = os.path.join(root, "tests", "python", "fixtures")
examples = os.path.join(root, "examples", "python")
os.makedirs(work, exist_ok=True)


def run(target, *flags):
    """attncheck check --python TARGET FLAGS... --json: (exit status, {law: record}, stdout+stderr)."""
    report = os.path.join(work, f"{scenario}.json")
    if os.path.exists(report):
        os.remove(report)
    p = subprocess.run([attncheck, "check", "--python", target, "--json", report, *flags],
                       capture_output=True, text=True, timeout=600)
    laws = {}
    if os.path.exists(report):
        impl = json.load(open(report))["implementations"][0]
        expect(impl["name"] == target and impl["source"] == "python:" + target, impl)
        laws = {l["law"]: l for l in impl["laws"]}
    return p.returncode, laws, p.stdout + p.stderr


def expect(cond, what, output=""):
    if not cond:
        print(f"FAILED: {what}\n{output[-4000:]}")
        sys.exit(1)


def fixture(name):
    return os.path.join(fixtures, name)


# The gradient laws (src/laws/grad_*.cpp). The forward scenarios leave them out: the
# gradient scenarios judge them, at 20 cases, so that each test stays a few seconds.
GRAD_LAWS = ["grad_matches_oracle", "grad_key_shift_zero", "grad_values_sum", "grad_linear_in_dout",
             "grad_consistent_with_forward", "grad_gqa_sums_group", "grad_empty_rows_zero", "grad_deterministic",
             "grad_key_permutation_equivariance", "grad_query_permutation_equivariance", "grad_layout_invariance"]
ONLY_GRAD = [a for law in GRAD_LAWS for a in ("--law", law)]
NO_GRAD = [a for law in GRAD_LAWS for a in ("--skip-law", law)]
GRAD_RUN = ["--cases", "20", "--min-judged", "10"]
# ABI v3's packed laws (src/laws/), for a function that declares "packed".
PACKED_LAWS = ["packed_equals_padded", "slack_inert_and_untouched", "empty_sequences"]
# ABI v3's stored-format laws, for a function that declares "kv_formats".
FORMAT_LAWS = ["quantized_matches_oracle", "scale_power_of_two", "equal_values_across_formats", "dead_codes_inert"]
# ABI v3's paged laws, for a function that declares "paged".
PAGED_LAWS = ["paged_equals_contiguous", "page_permutation_bit_identical", "page_size_independence",
              "dead_page_bytes_inert", "unread_table_entries_inert", "page_alias_equals_copy"]


if scenario == "numpy-reference-passes":
    # The README's command, at 30 cases per law (the whole default run is the "long" test).
    rc, laws, out = run(os.path.join(examples, "numpy_attention.py:attention"), "--seed", "17", "--cases", "30",
                        "--min-judged", "10", *NO_GRAD)
    expect(rc == 0, "the NumPy reference passes", out)
    expect(laws["layout_invariance"]["status"] == "pass", "strided views (layout_invariance) pass", out)
elif scenario == "numpy-reference-default":
    rc, laws, out = run("examples/python/numpy_attention.py:attention")
    expect(rc == 0, "attncheck check --python examples/python/numpy_attention.py:attention passes", out)
elif scenario == "founding-layer-fails":
    rc, laws, out = run(os.path.join(examples, "founding_layer.py:attention"), "--seed", "1",
                        "--law", "query_sensitivity", "--law", "weights_sum_to_one")
    q = laws["query_sensitivity"]
    expect(rc == 1 and q["status"] == "fail", "query_sensitivity fails", out)
    expect("1/sqrt(d)" in q.get("diagnosis", ""), f"the 1/sqrt(d) diagnosis, got {q.get('diagnosis')!r}", out)
    expect(laws["weights_sum_to_one"]["status"] == "pass", "its weights still sum to one", out)
elif scenario == "function-warnings":
    # Issue #34: a NumPy warning from the function is counted and reported with it, not printed.
    rc, laws, out = run(fixture("warns.py:attention"), "--seed", "3", "--law", "matches_oracle", "--cases", "25",
                        "--dtype", "f32")
    expect(rc == 0, "the warning function is still correct", out)
    warned = [line for line in out.splitlines() if "overflow encountered" in line or "slow path" in line]
    expect(len(warned) == 2 and all(line.startswith("  the function warned: ") for line in warned),
           "no Python warning printed on the terminal (only the report's lines)", out)
    report = json.load(open(os.path.join(work, f"{scenario}.json")))
    notes = report["implementations"][0].get("notes", [])
    exp = [n for n in notes if n.startswith("the function warned: RuntimeWarning: overflow encountered in exp (")]
    expect(len(exp) == 1, f"one note for the overflow, got {notes!r}", out)
    calls = int(exp[0].rsplit("(", 1)[1].split()[0])
    expect(calls >= laws["matches_oracle"]["judged"], f"every judged call warned: {exp[0]} vs {laws['matches_oracle']}", out)
    user = [n for n in notes if n.startswith("the function warned: UserWarning: more than one query: slow path (")]
    expect(len(user) == 1 and int(user[0].rsplit("(", 1)[1].split()[0]) < calls, f"the UserWarning's own count: {notes!r}", out)
    expect("  " + exp[0] in out, "the console's line under the implementation", out)
elif scenario == "torch-findings":
    rc, laws, out = run(os.path.join(examples, "torch_sdpa.py:attention"), "--seed", "20261130",
                        "--law", "fully_masked_rows_zero", "--law", "masked_keys_ignored",
                        "--law", "matches_oracle", "--law", "query_sensitivity")
    expect(rc == 1, "torch 1.13 fails", out)
    f = laws["fully_masked_rows_zero"]
    expect(f["status"] == "fail" and "NaN" in f["message"], "a row that sees no key is NaN", out)
    m = laws["masked_keys_ignored"]
    expect(m["status"] == "fail" and "nan" in m["message"].lower(), "a huge hidden key makes its row NaN", out)
    expect(laws["matches_oracle"]["status"] == "pass" and laws["query_sensitivity"]["status"] == "pass",
           "otherwise it computes attention", out)
elif scenario == "v2-features":
    rc, laws, out = run(fixture("v2_reference.py:attention"), "--seed", "3", "--cases", "30", "--min-judged", "10",
                        *NO_GRAD)
    expect(rc == 0, "the NumPy reference of every v2 feature passes", out)
    for law in ("gqa_equals_repeated_kv", "lengths_equal_slices", "window_equals_mask", "alibi_equals_bias",
                "softcap_bounds_weights", "sink_equals_extra_key", "bias_row_shift_invariance", "lse_matches_oracle"):
        expect(laws[law]["status"] == "pass", f"{law} judges the declared feature and passes", out)
elif scenario == "numpy-gradients-pass":
    # attention.attncheck_backward (the NumPy backward): the bridge declares a backward,
    # and every gradient law that applies passes (the example declares no "gqa").
    rc, laws, out = run(os.path.join(examples, "numpy_attention.py:attention"), "--seed", "17", *GRAD_RUN,
                        *ONLY_GRAD)
    expect(rc == 0, "the NumPy backward passes the gradient laws", out)
    for law in GRAD_LAWS:
        want = "skipped" if law == "grad_gqa_sums_group" else "pass"
        expect(laws[law]["status"] == want, f"{law}: {want}, got {laws[law]['status']}", out)
    expect("RuntimeWarning" not in out, "gradients beyond float32's range are cast without NumPy's warning", out)
elif scenario == "v2-gradients":
    # Every v2 feature's backward: GQA sums over the group, dq / dk / dv written on live
    # rows and keys only (a padding write is an out-of-bounds failure), lse passed in.
    rc, laws, out = run(fixture("v2_reference.py:attention"), "--seed", "3", *GRAD_RUN, *ONLY_GRAD)
    expect(rc == 0, "the NumPy backward of every v2 feature passes", out)
    for law in GRAD_LAWS:
        expect(laws[law]["status"] == "pass", f"{law} judges the declared features and passes", out)
elif scenario == "gradient-fault":
    # dS = P * dP without "- rowsum(dO * O)": the forward passes, the gradient laws fail
    # with the rowsum diagnosis.
    rc, laws, out = run(fixture("grad_faults.py:no_rowsum"), "--seed", "17", *GRAD_RUN, "--law", "matches_oracle",
                        "--law", "grad_key_shift_zero", "--law", "grad_matches_oracle")
    expect(rc == 1 and laws["matches_oracle"]["status"] == "pass", "the forward is right", out)
    for law in ("grad_key_shift_zero", "grad_matches_oracle"):
        expect(laws[law]["status"] == "fail", f"{law} fails", out)
        expect("rowsum" in laws[law].get("diagnosis", ""), f"{law}: the rowsum diagnosis, got "
               f"{laws[law].get('diagnosis')!r}", out)
elif scenario == "backward-errors":
    for fn, words in (("backward_raises", ["ValueError: deliberate backward failure", "in _deep_backward_helper",
                                           "in _raising_backward", "grad_faults.py:"]),
                      ("backward_wrong_shape", ["the backward returned dk of shape (1, 1, 1)",
                                                "expected shape (1, 1, 1, 1) = [batch, kv_heads, kv_len, head_dim]"]),
                      ("backward_two_items", ["must return (dq, dk, dv)", "tuple of 2 items"])):
        rc, laws, out = run(fixture(f"grad_faults.py:{fn}"), "--seed", "2", "--law", "grad_matches_oracle",
                            "--law", "matches_oracle")
        msg = laws["grad_matches_oracle"].get("message", "")
        expect(rc == 1 and all(w in msg for w in words), f"{fn}: expected {words} in {msg!r}", out)
        expect(laws["matches_oracle"]["status"] == "pass", f"{fn}: the forward still passes", out)
    rc, laws, out = run(fixture("grad_faults.py:backward_not_callable"), "--law", "grad_matches_oracle")
    expect(rc == 2 and "attncheck_backward must be a function" in out and "got a str" in out,
           "a backward that is not a function refuses the load (exit 2)", out)
elif scenario == "inputs-as-promised":
    rc, laws, out = run(fixture("misbehaving.py:records_inputs"), "--seed", "2", "--cases", "30",
                        "--min-judged", "10")
    expect(rc == 0, "read-only views of the right dtypes, bool masks, exactly the three keywords", out)
elif scenario == "exception-traceback":
    rc, laws, out = run(fixture("misbehaving.py:raises"), "--seed", "2", "--law", "matches_oracle")
    msg = laws["matches_oracle"].get("message", "")
    expect(rc == 1 and "ValueError: deliberate failure" in msg, "the exception fails the case", out)
    expect("misbehaving.py:" in msg and "in _deep_helper" in msg and "in raises" in msg,
           f"the message carries the traceback, got {msg!r}", out)
elif scenario == "wrong-return":
    for fn, words in (("wrong_shape", ["of shape (1, 1, 1)", "expected shape (1, 1, 1, 1)"]),
                      ("wrong_dtype", ["dtype int64", "a float dtype"]),
                      ("not_an_array", ["builtins.list", "NumPy array or a torch.Tensor"])):
        rc, laws, out = run(fixture(f"misbehaving.py:{fn}"), "--seed", "2", "--law", "matches_oracle")
        msg = laws["matches_oracle"].get("message", "")
        expect(rc == 1 and all(w in msg for w in words), f"{fn}: expected {words} in {msg!r}", out)
        expect("bridge_runtime.py" not in msg, f"{fn}: the bridge's own frames in {msg!r}")
elif scenario == "declined-calls":
    rc, laws, out = run(fixture("misbehaving.py:declines_f16"), "--seed", "2", "--law", "matches_oracle",
                        "--dtype", "f16,f32")
    expect(rc == 0 and "f16" in out and "unsupported" in out.lower(),
           "NotImplementedError on float16 is ATTNCHECK_UNSUPPORTED: f16 is dropped, f32 passes", out)
elif scenario == "segfault-is-no-crash":
    rc, laws, out = run(fixture("misbehaving.py:segfaults"), "--seed", "2", "--law", "no_crash",
                        "--law", "matches_oracle")
    expect(rc == 1 and laws["no_crash"]["status"] == "fail" and "SIGSEGV" in laws["no_crash"]["message"],
           "a segfault through ctypes is a no_crash failure, and the checker lives", out)
elif scenario == "load-refusals":
    for target, words in ((fixture("broken_import.py:attention"),
                           ["cannot import", "no_such_module_for_attncheck", "sys.path = [", "dist-packages"]),
                          ("no_such_module_for_attncheck:f", ["cannot import module 'no_such_module_for_attncheck'",
                                                              "sys.path = ["]),
                          (fixture("misbehaving.py:nope"), ["has no attribute 'nope'"]),
                          (fixture("unknown_feature.py:attention"), ["attncheck_features names ['dropout']"]),
                          ("no_colon", ["expected MODULE_OR_FILE:FUNCTION"])):
        rc, laws, out = run(target, "--law", "matches_oracle")
        expect(rc == 2 and all(w in out for w in words), f"{target}: exit 2 with {words}", out)
    # The user's frames lead an import error's traceback: not the bridge's own, nor importlib's.
    rc, laws, out = run(fixture("broken_import.py:attention"), "--law", "matches_oracle")
    expect("(traceback, most recent call last: broken_import.py:3 in <module>" in out, out)
    expect("bridge_runtime.py" not in out and "<frozen importlib" not in out, f"helper frames in {out}")
elif scenario == "save-and-replay":
    # A failure of a Python function is saved with source python:TARGET; replay finds the
    # function again from it, and replay --python runs the case on another function.
    cases = os.path.join(work, "cases")
    for f in os.listdir(cases) if os.path.isdir(cases) else []:
        os.remove(os.path.join(cases, f))
    layer = os.path.join(examples, "founding_layer.py:attention")
    rc, laws, out = run(layer, "--seed", "1", "--law", "query_sensitivity", "--save-failures", cases)
    expect(rc == 1 and len(os.listdir(cases)) == 1, "the failing case is saved", out)
    p = subprocess.run([attncheck, "replay", cases], capture_output=True, text=True, timeout=120)
    expect(p.returncode == 1 and "FAIL" in p.stdout and "python:" + layer in p.stdout,
           "replay reloads the recorded Python function and it still fails", p.stdout + p.stderr)
    p = subprocess.run([attncheck, "replay", cases, "--python", os.path.join(examples, "numpy_attention.py:attention")],
                       capture_output=True, text=True, timeout=120)
    expect(p.returncode == 0 and "PASS" in p.stdout, "replay --python: the reference passes the case",
           p.stdout + p.stderr)
elif scenario == "pythonpath-cannot-shadow":
    # A PYTHONPATH naming a folder with a fake numpy: the bridge appends PYTHONPATH after
    # its own paths, so Debian's NumPy is still the one imported.
    fake = os.path.join(work, "fake-site", "numpy")
    os.makedirs(fake, exist_ok=True)
    open(os.path.join(fake, "__init__.py"), "w").write("raise ImportError('the fake numpy was imported')\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(fake), PYTHONHOME="/nonexistent", PATH="/nonexistent")
    p = subprocess.run([attncheck, "check", "--python", os.path.join(examples, "numpy_attention.py:attention"),
                        "--law", "matches_oracle", "--seed", "5"], capture_output=True, text=True, env=env,
                       timeout=300)
    expect(p.returncode == 0, "PATH, PYTHONHOME and PYTHONPATH do not change the interpreter", p.stdout + p.stderr)
elif scenario == "packed-passes":
    # ABI v3 through the bridge: "packed" declared, cu_seqlens_q/k and total_q/k as
    # keywords, packed q and k as [total, heads, dim] (the fixture raises otherwise), and
    # the declared promises judged bit for bit.
    laws = PACKED_LAWS + ["sequence_order", "bounds_inert", "matches_oracle", "rerun_bit_identical", "batch_invariance"]
    rc, got, out = run(fixture("packed.py:varlen_attention"), "--seed", "5", "--cases", "30", "--min-judged", "10",
                       *[a for law in laws for a in ("--law", law)])
    expect(rc == 0, "a correct NumPy varlen attention passes the packed and promised laws", out)
    for law in laws:
        expect(got[law]["status"] == "pass" and got[law]["judged"] >= 10, f"{law} judged >= 10 cases: {got[law]}", out)
elif scenario == "packed-fault":
    # The same, reading a packed key slot whole when kv_lens says fewer keys are live. At
    # the default 100 cases (each law stops at its first failure: about a second); at
    # seeds 1 to 7 every packed law caught it by its 70th case.
    rc, got, out = run(fixture("packed.py:varlen_ignores_kv_lens"), "--seed", "5", "--min-judged", "10",
                       "--law", "matches_oracle", *[a for law in PACKED_LAWS for a in ("--law", law)])
    expect(rc == 1 and got["matches_oracle"]["status"] == "pass", "padded keys are right", out)
    for law in PACKED_LAWS:
        expect(got[law]["status"] == "fail", f"{law} fails", out)
elif scenario == "alibi-broadcast-passes":
    # ABI v3's ALIBI_BATCH and BROADCAST_KV through the bridge: alibi_slopes as
    # [batch, heads] rows, k and v with a stride of 0 (NumPy reads them as they come).
    # Were the rows passed as row 0's [heads], alibi_batch_matches_alone would fail.
    laws = ["alibi_batch_matches_alone", "broadcast_equals_materialized", "matches_oracle"]
    rc, got, out = run(fixture("alibi_broadcast.py:attention"), "--seed", "5", "--cases", "30", "--min-judged", "10",
                       *[a for law in laws for a in ("--law", law)])
    expect(rc == 0, "a correct NumPy attention passes with slopes per batch entry and expanded K and V", out)
    for law in laws:
        expect(got[law]["status"] == "pass" and got[law]["judged"] >= 10, f"{law} judged >= 10 cases: {got[law]}", out)
elif scenario == "paged-passes":
    # ABI v3's paged caches through the bridge: "paged" declared, k and v the page pool
    # [num_pages, kv_heads, page_size, d] and block_table, page_size, num_pages,
    # max_pages_per_seq as keywords (the fixture raises otherwise); packed q beside them.
    laws = PAGED_LAWS + ["matches_oracle", "packed_equals_padded"]
    rc, got, out = run(fixture("paged.py:paged_attention"), "--seed", "5", "--cases", "30", "--min-judged", "10",
                       *[a for law in laws for a in ("--law", law)])
    expect(rc == 0, "a correct NumPy paged attention passes the paged laws", out)
    for law in laws:
        expect(got[law]["status"] == "pass" and got[law]["judged"] >= 10, f"{law} judged >= 10 cases: {got[law]}", out)
elif scenario == "paged-fault":
    # The same, reading sequence b's pages as the consecutive pages b * max_pages_per_seq + i
    # (the table never read). At seeds 1 to 7 each paged law below caught it by its 15th case.
    rc, got, out = run(fixture("paged.py:paged_consecutive_pages"), "--seed", "5", "--min-judged", "10",
                       "--law", "packed_equals_padded", *[a for law in PAGED_LAWS for a in ("--law", law)])
    expect(rc == 1 and got["packed_equals_padded"]["status"] == "pass", "unpaged keys are right", out)
    for law in PAGED_LAWS:
        expect(got[law]["status"] == "fail", f"{law} fails", out)
elif scenario == "kv-formats-passes":
    # ABI v3's stored K/V formats through the bridge: "kv_formats" declared with every format
    # in fn.attncheck_kv_formats; k and v arrive as their codes, k_format, v_format, k_scale,
    # v_scale as keywords (the fixture decodes each exactly).
    laws = FORMAT_LAWS + ["matches_oracle"]
    rc, got, out = run(fixture("kv_formats.py:quantized_attention"), "--seed", "5", "--cases", "30",
                       "--min-judged", "10", *[a for law in laws for a in ("--law", law)])
    expect(rc == 0, "a correct NumPy attention over stored formats passes the format laws", out)
    for law in laws:
        expect(got[law]["status"] == "pass" and got[law]["judged"] >= 10, f"{law} judged >= 10 cases: {got[law]}", out)
elif scenario == "kv-formats-fault":
    # The same, reading fp8, int8 and int4 codes without their scales (flashinfer#4979): caught
    # at seeds 1, 2, 3 and 5 by the 1st to 3rd case, the layout fault named.
    rc, got, out = run(fixture("kv_formats.py:scale_ignored"), "--seed", "5", "--min-judged", "10",
                       "--law", "matches_oracle", "--law", "quantized_matches_oracle")
    l = got["quantized_matches_oracle"]
    expect(rc == 1 and got["matches_oracle"]["status"] == "pass", "K and V in the dtype are right", out)
    expect(l["status"] == "fail" and "scales ignored" in l["message"], f"the ignored scale named: {l}", out)
elif scenario == "promises":
    rc, got, out = run(fixture("promises.py:drifts"), "--seed", "5", "--cases", "30", "--min-judged", "10",
                       "--dtype", "f32,f64", "--law", "matches_oracle", "--law", "rerun_bit_identical")
    expect(rc == 1 and got["rerun_bit_identical"]["status"] == "fail"
           and got["matches_oracle"]["status"] == "pass", "a broken promise fails its law, and only it", out)
    for target, words in (("promises.py:no_backward", ["attncheck_promises names 'deterministic_backward'",
                                                       "no attncheck_backward"]),
                          ("promises.py:unknown_promise", ["attncheck_promises names ['bounded_error']",
                                                           "'batch_invariant', 'deterministic', 'deterministic_backward'"])):
        rc, got, out = run(fixture(target), "--law", "matches_oracle")
        expect(rc == 2 and all(w in out for w in words), f"{target}: exit 2 with {words}", out)
else:
    print(f"unknown scenario {scenario}")
    sys.exit(2)
print(f"{scenario}: ok")
