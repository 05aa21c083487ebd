#!/usr/bin/env bash
# Runs every fuzz target in libFuzzer's fork mode for a night, keeping each
# target's corpus between runs, then merges it small and summarises.
#
# usage: fuzz/overnight.sh [--hours N] [--jobs N] [--build DIR] [--work DIR]
#   --hours N   total wall time, shared equally by the targets (default 8; fractions allowed)
#   --jobs N    libFuzzer -fork=N worker processes (default: number of cores)
#   --build DIR the fuzz build (default build-fuzz: cmake --preset fuzz && cmake --build --preset fuzz)
#   --work DIR  corpora, crash inputs, logs and case files (default fuzz-work)
# fuzz_plugin runs too when $ATTNCHECK_PLUGIN names a plugin.
# At check's shapes: ATTNCHECK_FUZZ_PROFILE=NAME and/or ATTNCHECK_FUZZ_SHAPES="--head-dim 128 ..."
# (fuzz/README.md, "Knobs"), checked before the night starts (exit 2 on a bad value); then each
# target keeps its corpus in <work>/<target>@<shapes> (the same bytes mean other problems there),
# inputs may reach $FUZZ_SHAPES_MAX_LEN bytes (default 65536: q, k and v at head_dim 128 need
# them), and fuzz_case_file, which draws no problem, is left out.
# On a terminal one progress line (stderr) shows the target, its time and its
# libFuzzer status (execs, coverage); plain when piped or with CI=true.
# Exit status: 0 the night ran (findings are in the summary); 2 bad arguments
# or no fuzz target built in the build folder.
#
# Layout of the work folder (safe to keep between runs; stopping with Ctrl-C
# finishes the current target's merge and prints the summary):
#   <work>/<target>/corpus     the corpus, seeded from fuzz/corpus/<target>, merged after each run
#                              (<work>/<target>@<shapes>/ with a profile)
#   <work>/<target>/crashes/   libFuzzer's crash-*, timeout-*, oom-* inputs
#   <work>/<target>/*.log      libFuzzer's output, one file a run
#   <work>/regressions/        case files the targets wrote ($ATTNCHECK_REGRESSION_DIR)
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
hours=8
jobs=$(nproc 2>/dev/null || echo 2)
build=$root/build-fuzz
work=$root/fuzz-work
while [ $# -gt 0 ]; do
  case "$1" in
    --hours) hours=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --build) build=$(cd "$2" && pwd) || exit 2; shift 2 ;;
    --work) mkdir -p "$2" && work=$(cd "$2" && pwd) || exit 2; shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "overnight.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

# check's shapes instead of the caps: a folder name of their own, longer inputs.
shapes="${ATTNCHECK_FUZZ_PROFILE:-}${ATTNCHECK_FUZZ_PROFILE:+ }${ATTNCHECK_FUZZ_SHAPES:-}"
shapes_tag=$(tr -c 'A-Za-z0-9.\n' '_' <<<"$shapes" | sed 's/__*/_/g; s/^_//; s/_$//')
targets=(fuzz_differential fuzz_overflow fuzz_case_file fuzz_gradients)
if [ -n "$shapes" ]; then targets=(fuzz_differential fuzz_overflow fuzz_gradients); fi
if [ -n "${ATTNCHECK_PLUGIN:-}" ]; then targets+=(fuzz_plugin); fi
built=0
for t in "${targets[@]}"; do [ -x "$build/fuzz/$t" ] && built=$((built + 1)); done
if [ "$built" = 0 ]; then
  echo "overnight.sh: no fuzz target in $build/fuzz (build them: cmake --preset fuzz && cmake --build --preset fuzz," \
       "or name the build with --build DIR)" >&2
  exit 2
fi
# A bad profile or shape flag ends the night before it starts, with the target's message.
if [ -n "$shapes" ]; then
  for t in "${targets[@]}"; do
    [ -x "$build/fuzz/$t" ] || continue
    empty=$(mktemp -d)
    if ! out=$("$build/fuzz/$t" -runs=0 "$empty" 2>&1); then
      rm -rf "$empty"
      if grep -q '^attncheck fuzz: ' <<<"$out"; then grep '^attncheck fuzz: ' <<<"$out" >&2; exit 2; fi
    fi
    rm -rf "$empty"
    break
  done
  echo "== at check's shapes: $shapes (corpora in $work/<target>@$shapes_tag)"
fi
# The progress line: on a terminal only, never in CI logs.
# It goes to fd 3, the terminal's stderr: run_child's own output goes to a log.
progress=0
if [ -t 2 ] && [ "${CI:-}" != true ]; then progress=1; fi
exec 3>&2
mkdir -p "$work"
export ATTNCHECK_REGRESSION_DIR=${ATTNCHECK_REGRESSION_DIR:-$work/regressions}
mkdir -p "$ATTNCHECK_REGRESSION_DIR"
stamp=$work/.started-$$
touch "$stamp"
per_target=$(python3 -c "print(max(10, int($hours * 3600 / ${#targets[@]})))")

stop=0
child=
on_signal() {
  stop=1
  echo "overnight.sh: stopping; merging the current corpus and writing the summary" >&2
  if [ -n "$child" ]; then kill -INT "$child" 2>/dev/null; fi
}
trap on_signal INT TERM

dict_of() { case "$1" in fuzz_case_file) echo "$root/fuzz/dicts/case_file.dict" ;; *) echo "$root/fuzz/dicts/problem.dict" ;; esac; }

# The [libfuzzer] lines of fuzz/<target>.options as flags (-max_len=4096 ...).
flags_of() {
  local f=$root/fuzz/$1.options
  [ -f "$f" ] || return 0
  sed -n 's/^[[:space:]]*\([a-z_]*\)[[:space:]]*=[[:space:]]*\([^[:space:]#]*\).*/-\1=\2/p' "$f"
}

# One progress line on stderr, redrawn in place: the target, the time spent
# of its share, libFuzzer's last status line in $log (execs, coverage).
draw_progress() {
  local spent=$(( $(date +%s) - started_at ))
  local last
  last=$(grep -aE '^#[0-9]+: cov:' "$log" 2>/dev/null | tail -1 | cut -c1-70)
  printf '\r\033[K[%d/%d] %s: %ds of %ss  %s' "$index" "${#targets[@]}" "$t" "$spent" "$per_target" "$last" >&3
}

# Runs a command in the background so a signal reaches the trap, and waits for
# it (with a progress line, polling once a second instead).
run_child() {
  "$@" &
  child=$!
  started_at=$(date +%s)
  if [ "$progress" = 1 ]; then
    while kill -0 "$child" 2>/dev/null; do draw_progress; sleep 1; done
    printf '\r\033[K' >&3
  fi
  wait "$child"
  local rc=$?
  # A signal interrupts wait; wait again for the child to finish its wrap-up.
  while kill -0 "$child" 2>/dev/null; do wait "$child"; rc=$?; done
  child=
  return $rc
}

summary=()
index=0
for t in "${targets[@]}"; do
  index=$((index + 1))
  bin=$build/fuzz/$t
  if [ ! -x "$bin" ]; then summary+=("$t: not built ($bin missing; cmake --preset fuzz && cmake --build --preset fuzz)"); continue; fi
  # (the whole help text first: grep -q closing the pipe early would fail the check under pipefail)
  help=$("$bin" -help=1 2>&1)
  if ! grep -q '^Usage:' <<<"$help"; then
    summary+=("$t: $bin is not a libFuzzer build (use the fuzz preset)"); continue
  fi
  if [ "$stop" = 1 ]; then summary+=("$t: skipped (stopped)"); continue; fi
  dir=$work/$t${shapes:+@$shapes_tag}
  corpus=$dir/corpus
  mkdir -p "$corpus" "$dir/crashes"
  rm -rf "$corpus.merging"  # left over from an interrupted merge
  cp -n "$root/fuzz/corpus/$t/"* "$corpus/" 2>/dev/null
  before=$(find "$corpus" -type f | wc -l)
  mapfile -t opts < <(flags_of "$t")
  # (libFuzzer takes the last of a repeated flag: this one wins over the .options' max_len)
  if [ -n "$shapes" ]; then opts+=("-max_len=${FUZZ_SHAPES_MAX_LEN:-65536}"); fi
  log=$dir/$(date -u +%Y%m%dT%H%M%SZ).log
  echo "== $t: ${per_target}s, -fork=$jobs, corpus $before inputs, log $log"
  run_child "$bin" -fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -max_total_time="$per_target" \
    -print_final_stats=1 -dict="$(dict_of "$t")" -artifact_prefix="$dir/crashes/" "${opts[@]}" "$corpus" >"$log" 2>&1

  # Merge into a fresh folder: only inputs that add coverage survive.
  mkdir -p "$corpus.merging"
  if "$bin" -merge=1 "${opts[@]}" "$corpus.merging" "$corpus" >>"$log" 2>&1; then
    rm -rf "$corpus.old" && mv "$corpus" "$corpus.old" && mv "$corpus.merging" "$corpus" && rm -rf "$corpus.old"
  else
    rm -rf "$corpus.merging"; echo "$t: merge failed, corpus kept unmerged (see $log)" >&2
  fi
  after=$(find "$corpus" -type f | wc -l)
  # Fork mode's last status line: "#<execs>: cov: .. ft: .. corp: .. exec/s .. oom/timeout/crash: a/b/c time: ..".
  last=$(grep -E '^#[0-9]+: cov:' "$log" | tail -1)
  execs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")
  faults=$(sed -nE 's/.*oom\/timeout\/crash: ([0-9\/]+).*/\1/p' <<<"$last")
  summary+=("$t: ${execs:-0} execs, oom/timeout/crash ${faults:-0/0/0}, corpus $before -> $after inputs after merge")
  while IFS= read -r crash; do
    summary+=("  new input: $crash   (rerun: $bin $crash)")
  done < <(find "$dir/crashes" -type f -newer "$stamp" | sort)
done

echo
echo "== overnight summary ($work)"
for line in "${summary[@]}"; do echo "$line"; done
cases=$(find "$ATTNCHECK_REGRESSION_DIR" -name '*.json' -newer "$stamp" | sort)
if [ -n "$cases" ]; then
  echo "== new case files (move the real ones to regression/cases/):"
  while IFS= read -r c; do echo "  attncheck replay $c"; done <<<"$cases"
else
  echo "== no new case files in $ATTNCHECK_REGRESSION_DIR"
fi
rm -f "$stamp"
