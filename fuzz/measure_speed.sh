#!/usr/bin/env bash
# A fuzz target's speed at the default shape caps, in two builds: libFuzzer
# without sanitizers (build-fuzz-nosan, Release: the ceiling) and the fuzz preset
# (build-fuzz, ASan + UBSan: what overnight.sh and the smoke run). Each runs
# for SECONDS_PER_RUN (default 20) on a fresh copy of the target's seed corpus and
# prints libFuzzer's average exec/s and the coverage it ended with (cov: edges,
# ft: features). A build that is missing is configured and built first (the
# target only; -j2). The flags of fuzz/TARGET.options apply, then FUZZ_FLAGS
# (later flags win: FUZZ_FLAGS=-entropic=1 measures a target as if its
# .options had no `entropic = 0`).
#
# FUZZ_TARGET: the target (default fuzz_differential). fuzz_plugin needs
# ATTNCHECK_PLUGIN (fuzz/README.md).
# A finding ends a run early: the line then says so, the exec/s is over the
# shorter run, and the run's log, crash input and case files are kept (the
# line names the directory; everything else is removed at exit).
# ATTNCHECK_FUZZ_SKIP_LAWS=law (fuzz/README.md) leaves a known one out.
#
# Example usage:
#   fuzz/measure_speed.sh            # fuzz_differential, both builds, 20 s each
#   SECONDS_PER_RUN=60 fuzz/measure_speed.sh nosan
#   FUZZ_TARGET=fuzz_overflow FUZZ_FLAGS=-entropic=0 fuzz/measure_speed.sh nosan
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${SECONDS_PER_RUN:-20}
which=${1:-all}
target=${FUZZ_TARGET:-fuzz_differential}
read -r -a extra <<<"${FUZZ_FLAGS:-}"
dict=fuzz/dicts/problem.dict  # every target's but fuzz_case_file's, as overnight.sh picks them
[ "$target" = fuzz_case_file ] && dict=fuzz/dicts/case_file.dict
[ -f "fuzz/$target.options" ] && [ -d "fuzz/corpus/$target" ] || { echo "no fuzz target $target (fuzz/$target.options, fuzz/corpus/$target)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attncheck-fuzz-speed.XXXXXX")
keep=()  # directories of runs that found something: kept at exit
cleanup() {
  local d
  for d in "$tmp"/*; do
    [[ " ${keep[*]:-} " == *" $d "* ]] || rm -rf "$d"
  done
  [ ${#keep[@]} -gt 0 ] || rmdir "$tmp"
}
trap cleanup EXIT

build_nosan() {
  if [ ! -f build-fuzz-nosan/CMakeCache.txt ]; then
    cmake -S . -B build-fuzz-nosan -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
      -DATTNCHECK_FUZZ_ENGINE=libfuzzer -DATTNCHECK_SANITIZE= -DATTNCHECK_BUILD_TESTS=OFF \
      -DATTNCHECK_BUILD_BENCH=OFF -DATTNCHECK_WITH_TORCH=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  cmake --build build-fuzz-nosan -j2 --target "$target" >/dev/null
}

build_preset() {
  [ -f build-fuzz/CMakeCache.txt ] || cmake --preset fuzz >/dev/null
  cmake --build build-fuzz -j2 --target "$target" >/dev/null
}

# measure LABEL BINARY: one run, then the exec/s line.
measure() {
  local label=$1 bin=$2 status=0 run
  run="$tmp/$3"
  mkdir -p "$run/corpus" && cp fuzz/corpus/"$target"/* "$run/corpus/"
  # The target's .options flags, as overnight.sh and ClusterFuzzLite pass them.
  local -a opts
  mapfile -t opts < <(sed -n 's/^[[:space:]]*\([a-z_]*\)[[:space:]]*=[[:space:]]*\([^[:space:]#]*\).*/-\1=\2/p' \
                      "fuzz/$target.options")
  ATTNCHECK_REGRESSION_DIR=$run/regressions "$bin" "${opts[@]}" "${extra[@]}" -max_total_time="$seconds" -print_final_stats=1 \
    -dict="$dict" -artifact_prefix="$run/" "$run/corpus" >"$run/log" 2>&1 || status=$?
  local execs runs coverage
  execs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$run/log" | tail -1)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$run/log" | tail -1)
  # The last status line's "cov: N ft: M".
  coverage=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$run/log" | tail -1)
  local what="$target${extra[*]:+ ${extra[*]}}"
  if [ "$status" -eq 0 ]; then
    echo "$what [$label]: ${execs:-?} exec/s (${runs:-?} runs in ${seconds} s; ${coverage:-no coverage line})"
  else
    rm -rf "$run/corpus"
    keep+=("$run")
    echo "$what [$label]: ${execs:-?} exec/s (${runs:-?} runs; ${coverage:-no coverage line}; stopped early by a finding, exit $status:" \
         "$(grep -m1 -A1 '^== attncheck finding' "$run/log" | tr '\n' ' ' | cut -c1-200))"
    echo "  kept: $run (log, crash input, case files under regressions/)"
  fi
}

if [ "$which" = all ] || [ "$which" = nosan ]; then
  build_nosan
  measure "libFuzzer, no sanitizers, Release" "build-fuzz-nosan/fuzz/$target" nosan
fi
if [ "$which" = all ] || [ "$which" = preset ]; then
  build_preset
  measure "fuzz preset: libFuzzer + ASan + UBSan" "build-fuzz/fuzz/$target" preset
fi
