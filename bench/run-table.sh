#!/usr/bin/env bash
# Runs attncheck_bench once with JSON output and prints a markdown table: each
# benchmark's time and GFLOP/s, its ratio to libtorch's SDPA at the same dtype
# and shape (torch/...: f32, torch/f64/...) and to gemm_peak (the machine's
# f32 GEMM ceiling), and for plugin_overhead/<plugin>/{host,in_process}/... the
# time over the plugin's forward called directly on an encoded call (.../direct/...),
# and for plugin_overhead/<plugin>/paired/... the same ratios from calls made
# side by side (medians of each variant's calls, the order rotating).
# docs/speed.md's tables are this output.
#
# Usage: bench/run-table.sh [BUILD_DIR] [FILTER]
#   BUILD_DIR  default: build
#   FILTER     a --benchmark_filter regex; default: the shapes that finish in
#              a few minutes on 2 cores (L <= 1024, the oracle at L = 256, the
#              tiny plugin call, check of the three references). "." runs every
#              benchmark: the oracle at L = 4096 and above takes hours today.
# REPS=N (environment, default 1): each benchmark N times, and the table gives
# the medians (this machine's timings swing by a third from run to run).
# The JSON is kept in BUILD_DIR/bench-table.json.
set -euo pipefail
build=${1:-build}
filter=${2:-'^(gemm_peak|forward/[a-z]+/B1H8L(256|1024)D|torch/(f64/)?B1H8L(256|1024)D|oracle/f(32|64)/B1H8L256D|plugin_overhead/[a-z_]+/[a-z_]+/B1H1L1D1|check/(reference|naive|online)/)'}
json="$build/bench-table.json"
reps=${REPS:-1}
repeat=()
if [ "$reps" -gt 1 ]; then repeat=(--benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true); fi
"$build/bench/attncheck_bench" --benchmark_filter="$filter" --benchmark_out="$json" \
  --benchmark_out_format=json "${repeat[@]}" >&2
/usr/bin/python3 - "$json" "$reps" <<'PY'
import json, re, sys

data = json.load(open(sys.argv[1]))
reps = int(sys.argv[2])
# Google Benchmark appends /iterations:N and /real_time to the registered name
# (and _median to a median's).
def base(name):
    return re.sub(r"/(iterations:\d+|real_time|manual_time|repeats:\d+)", "", re.sub(r"_median$", "", name))

if reps > 1:
    rows = [(base(b["name"]), b) for b in data["benchmarks"] if b.get("aggregate_name") == "median"]
else:
    rows = [(base(b["name"]), b) for b in data["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
by_name = {n: b for n, b in rows}
gflops = {n: b.get("GFLOP/s") for n, b in rows}
peak = gflops.get("gemm_peak")

def torch_name(name):
    # forward/<impl>/<shape> and oracle/f32/<shape> -> torch/<shape>;
    # oracle/f64/<shape> -> torch/f64/<shape>.
    m = re.match(r"forward/[^/]+/(.*)", name) or re.match(r"oracle/f32/(.*)", name)
    if m: return "torch/" + m.group(1)
    m = re.match(r"oracle/f64/(.*)", name)
    if m: return "torch/f64/" + m.group(1)
    return None

def seconds(b):
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
    return b["real_time"] * scale

def fmt_time(s):
    for unit, f in (("s", 1), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if s >= f: return f"{s / f:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"

ctx = data["context"]
print(f"Measured {ctx['date']} on {ctx['num_cpus']} CPUs at {ctx['mhz_per_cpu']} MHz "
      f"(load average {', '.join(f'{x:.2f}' for x in ctx.get('load_avg', []))}), by `bench/run-table.sh`"
      + (f", medians of {reps} runs" if reps > 1 else "") + ".\n")
print("| benchmark | time | GFLOP/s | vs torch | vs gemm_peak | note |")
print("|---|---|---|---|---|---|")
for name, b in rows:
    g = gflops[name]
    t = torch_name(name)
    vs_torch = f"{g / gflops[t]:.2f}" if g and t and gflops.get(t) else ""
    vs_peak = f"{g / peak:.3f}" if g and peak and name != "gemm_peak" else ""
    note = ""
    m = re.match(r"plugin_overhead/([^/]+)/(host|in_process)/(.*)", name)
    if m:
        direct = by_name.get(f"plugin_overhead/{m.group(1)}/direct/{m.group(3)}")
        if direct: note = f"{m.group(2).replace('_', '-')} / direct = {seconds(b) / seconds(direct):.3f}"
    # The paired variant's ratios of medians, each call timed by itself in turn.
    if "host/direct" in b:
        note = f"side by side: host / direct = {b['host/direct']:.3f}, in-process / direct = {b['in_process/direct']:.3f}"
    # Issue #12's anchors: the oracle's double path against libtorch's f64 SDPA,
    # its f64 path against its double path.
    m = re.match(r"oracle/f32/(.*)", name)
    if m and gflops.get("torch/f64/" + m.group(1)) and g:
        note = f"vs torch f64 = {g / gflops['torch/f64/' + m.group(1)]:.2f}"
    # The double path's own arithmetic (oracle_bench.cpp) against the ceiling.
    if m and b.get("f32_op_GFLOP/s") and peak:
        note = (note + "; " if note else "") + f"its arithmetic at {b['f32_op_GFLOP/s'] / peak:.2f} of gemm_peak"
    m = re.match(r"oracle/f64/(.*)", name)
    if m and gflops.get("oracle/f32/" + m.group(1)) and g:
        note = f"vs oracle/f32 = {g / gflops['oracle/f32/' + m.group(1)]:.2f}"
    if "exit_status" in b: note = f"exit status {int(b['exit_status'])}"
    if "max_rss_MiB" in b: note = f"peak RSS {b['max_rss_MiB']:.0f} MiB"
    if b.get("label"): note = (note + "; " if note else "") + b["label"]
    if b.get("error_occurred"): note = "error: " + b.get("error_message", "")
    print(f"| `{name}` | {fmt_time(seconds(b))} | {f'{g:.3g}' if g else ''} | {vs_torch} | {vs_peak} | {note} |")
PY
