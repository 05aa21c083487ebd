#!/usr/bin/env bash
# fuzz_differential's speed at the default shape caps, in two builds: libFuzzer
# without sanitizers (build-fuzz-nosan, Release: the ceiling) and the fuzz preset
# (build-fuzz, ASan + UBSan: what overnight.sh and the smoke run). Each runs
# for SECONDS (default 20) on a fresh copy of the seed corpus and prints
# libFuzzer's average exec/s. A build that is missing is configured and built
# first (fuzz_differential only; -j2). The flags of fuzz/fuzz_differential.options apply.
#
# A finding ends a run early: the line then says so and the exec/s is over the
# shorter run. ATTNCHECK_FUZZ_SKIP_LAWS=law (fuzz/README.md) leaves a known one out.
#
# Example usage:
#   fuzz/measure_speed.sh            # both builds, 20 s each
#   SECONDS_PER_RUN=60 fuzz/measure_speed.sh nosan
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${SECONDS_PER_RUN:-20}
which=${1:-all}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attncheck-fuzz-speed.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

build_nosan() {
  if [ ! -f build-fuzz-nosan/CMakeCache.txt ]; then
    cmake -S . -B build-fuzz-nosan -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
      -DATTNCHECK_FUZZ_ENGINE=libfuzzer -DATTNCHECK_SANITIZE= -DATTNCHECK_BUILD_TESTS=OFF \
      -DATTNCHECK_BUILD_BENCH=OFF -DATTNCHECK_WITH_TORCH=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  cmake --build build-fuzz-nosan -j2 --target fuzz_differential >/dev/null
}

build_preset() {
  [ -f build-fuzz/CMakeCache.txt ] || cmake --preset fuzz >/dev/null
  cmake --build build-fuzz -j2 --target fuzz_differential >/dev/null
}

# measure LABEL BINARY: one run, then the exec/s line.
measure() {
  local label=$1 bin=$2 status=0
  rm -rf "$tmp/corpus" && mkdir -p "$tmp/corpus" && cp fuzz/corpus/fuzz_differential/* "$tmp/corpus/"
  # The target's .options flags, as overnight.sh and ClusterFuzzLite pass them.
  local -a opts
  mapfile -t opts < <(sed -n 's/^[[:space:]]*\([a-z_]*\)[[:space:]]*=[[:space:]]*\([^[:space:]#]*\).*/-\1=\2/p' \
                      fuzz/fuzz_differential.options)
  ATTNCHECK_REGRESSION_DIR=$tmp/regressions "$bin" "${opts[@]}" -max_total_time="$seconds" -print_final_stats=1 \
    -dict=fuzz/dicts/problem.dict -artifact_prefix="$tmp/" "$tmp/corpus" >"$tmp/log" 2>&1 || status=$?
  local execs runs
  execs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$tmp/log" | tail -1)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/log" | tail -1)
  if [ "$status" -eq 0 ]; then
    echo "fuzz_differential [$label]: ${execs:-?} exec/s (${runs:-?} runs in ${seconds} s)"
  else
    echo "fuzz_differential [$label]: ${execs:-?} exec/s (${runs:-?} runs; stopped early by a finding, exit $status:" \
         "$(grep -m1 -A1 '^== attncheck finding' "$tmp/log" | tr '\n' ' ' | cut -c1-200))"
  fi
}

if [ "$which" = all ] || [ "$which" = nosan ]; then
  build_nosan
  measure "libFuzzer, no sanitizers, Release" build-fuzz-nosan/fuzz/fuzz_differential
fi
if [ "$which" = all ] || [ "$which" = preset ]; then
  build_preset
  measure "fuzz preset: libFuzzer + ASan + UBSan" build-fuzz/fuzz/fuzz_differential
fi
