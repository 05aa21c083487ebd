#!/usr/bin/env bash
# CI fuzz smoke: builds the fuzz targets with ClusterFuzzLite's build script
# (.clusterfuzzlite/build.sh, clang + libFuzzer + ASan), then runs every target
# it put in $OUT for a few seconds from its seed corpus, with its .options and
# dictionary. Fails when any target finds something (a failing law, a crash, a
# sanitizer report, a leak, a timeout); the finding's case file and crash input
# are kept and printed. Prints each target's exec/s.
#
# Environment (all optional):
#   FUZZ_SMOKE_SECONDS   seconds per target (default: 20 for fuzz_differential, 5 for fuzz_gradients,
#                        10 for the others)
#   FUZZ_SMOKE_SEED      libFuzzer -seed (default: random; the log prints the one used)
#   FUZZ_SMOKE_LANES     how many targets run at once (default: nproc)
#   FUZZ_SMOKE_DIR       where SRC, WORK, OUT, logs, artifacts and case files go (default: a new temp dir)
#   CC CXX CFLAGS CXXFLAGS LIB_FUZZING_ENGINE SRC WORK OUT: as for build.sh; defaults below
#   ATTNCHECK_FUZZ_BUILD_DIR  an existing libFuzzer build (clang, ATTNCHECK_FUZZ_ENGINE=libfuzzer)
#                        that build.sh builds the targets in instead of configuring its own with
#                        CC/CFLAGS (a sanitizer build whose tests already ran: the library is
#                        compiled once; .ci/run passes its asan-clang build); unset: build.sh's own
#                        build, as ClusterFuzzLite's
#   ATTNCHECK_FUZZ_SKIP_LAWS etc. (fuzz/README.md) pass through to the targets.
#
# Example usage (from .ci/run):
#   fuzz/ci-smoke.sh
#   ATTNCHECK_FUZZ_BUILD_DIR=$PWD/build-asan-clang fuzz/ci-smoke.sh
#   FUZZ_SMOKE_SECONDS=60 FUZZ_SMOKE_DIR=/tmp/smoke fuzz/ci-smoke.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${FUZZ_SMOKE_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/attncheck-fuzz-smoke.XXXXXX")}
mkdir -p "$dir"

export CC=${CC:-clang} CXX=${CXX:-clang++}
export CFLAGS=${CFLAGS:-"-O1 -fno-omit-frame-pointer -gline-tables-only -fsanitize=address,fuzzer-no-link"}
export CXXFLAGS=${CXXFLAGS:-$CFLAGS}
export LIB_FUZZING_ENGINE=${LIB_FUZZING_ENGINE:-"-fsanitize=fuzzer"}
export WORK=${WORK:-$dir/work} OUT=${OUT:-$dir/out}
if [ -z "${SRC:-}" ]; then  # build.sh wants the checkout at $SRC/attncheck
  export SRC=$dir/src
  mkdir -p "$SRC"
  ln -sfn "$root" "$SRC/attncheck"
fi
mkdir -p "$WORK" "$OUT"

echo "== fuzz smoke: building into $OUT"
bash "$root/.clusterfuzzlite/build.sh"

# libFuzzer flags from a ClusterFuzzLite <target>.options file: "key = value"
# lines of its [libfuzzer] section become -key=value.
options_flags() {
  [ -f "$1" ] || return 0
  awk '/^\[/{sec=$0; next} sec=="[libfuzzer]" && /^[a-z_]+[ \t]*=/ {
         split($0, kv, "="); k=kv[1]; v=substr($0, index($0, "=") + 1)
         gsub(/[ \t]/, "", k); gsub(/^[ \t]+|[ \t]+$/, "", v); printf "-%s=%s\n", k, v }' "$1"
}

regressions=$dir/regressions
# Each target is time-boxed, so the smoke's wall time is the sum of the budgets when the
# targets run one after another; they run FUZZ_SMOKE_LANES at a time instead (default: one
# per core; a target is one process), each writing its own log and exit status, and the
# results are read back in order below.
lanes=${FUZZ_SMOKE_LANES:-$(nproc)}
targets=()
for bin in "$OUT"/fuzz_*; do
  [ -f "$bin" ] && [ -x "$bin" ] || continue
  t=$(basename "$bin")
  targets+=("$t")
  case "$t" in fuzz_differential) default=20 ;; fuzz_gradients) default=5 ;; *) default=10 ;; esac
  seconds=${FUZZ_SMOKE_SECONDS:-$default}
  corpus=$dir/corpus/$t
  rm -rf "$corpus" && mkdir -p "$corpus" "$dir/artifacts"
  if [ -f "$OUT/${t}_seed_corpus.zip" ]; then
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
      "$OUT/${t}_seed_corpus.zip" "$corpus"
  fi
  args=(-max_total_time="$seconds" -print_final_stats=1 -timeout=30 -artifact_prefix="$dir/artifacts/$t-")
  mapfile -t opts < <(options_flags "$OUT/$t.options")
  args+=("${opts[@]}")
  [ -f "$OUT/$t.dict" ] && args+=(-dict="$OUT/$t.dict")
  [ -n "${FUZZ_SMOKE_SEED:-}" ] && args+=(-seed="$FUZZ_SMOKE_SEED")
  echo "== $t: ${seconds}s, $bin ${args[*]} $corpus"
  echo "$seconds" > "$dir/$t.seconds"
  while [ "$(jobs -rp | wc -l)" -ge "$lanes" ]; do wait -n || true; done
  ( status=0
    ATTNCHECK_REGRESSION_DIR=$regressions "$bin" "${args[@]}" "$corpus" >"$dir/$t.log" 2>&1 || status=$?
    echo "$status" > "$dir/$t.status" ) &
done
wait

failed=()
summary=()
for t in "${targets[@]}"; do
  log=$dir/$t.log
  status=$(cat "$dir/$t.status" 2>/dev/null || echo "no status")
  seconds=$(cat "$dir/$t.seconds")
  execs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  line="$t: ${execs:-?} exec/s (${runs:-?} runs, ${seconds} s budget, $lanes at a time)"
  if [ "$status" != 0 ]; then
    line+=" FAILED (exit $status)"
    failed+=("$t")
    echo "-- $t found something (exit $status); log: $log"
    # The attncheck finding (law, implementation, problem, case file), else the sanitizer or libFuzzer report.
    if grep -q '^== attncheck finding' "$log"; then
      sed -n '/^== attncheck finding/,/^== \(reproduce\|could not save\)/p' "$log" | head -80
    else
      grep -m1 -A30 -E '^==[0-9]+== *ERROR|runtime error:' "$log" || tail -30 "$log"
    fi
    grep -E 'Test unit written to' "$log" || true
  fi
  echo "$line"
  summary+=("$line")
done

echo "== fuzz smoke summary (logs, artifacts and case files in $dir)"
printf '  %s\n' "${summary[@]}"
if [ "${#summary[@]}" -eq 0 ]; then
  echo "fuzz smoke: build.sh put no fuzz_* target in $OUT" >&2
  exit 1
fi
if [ "${#failed[@]}" -ne 0 ]; then
  echo "fuzz smoke: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz smoke: passed"
