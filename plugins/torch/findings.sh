#!/usr/bin/env bash
# The findings table of docs/torch-findings.md: runs the whole law catalogue
# and the opt-in nan_propagates law on the libtorch plugin, and prints one
# Markdown table (law | status | message | diagnosis) on stdout.
#
#   plugins/torch/findings.sh [SEED] [extra `attncheck check` flags...]
#   e.g. plugins/torch/findings.sh 20261130 --save-failures regression/cases
#
# Environment: ATTNCHECK (default build/attncheck), PLUGIN (default
# build/plugins/libtorch_attention.so), JSON_DIR (where the two JSON reports
# are kept; default a temporary folder, removed at exit).
# Exit status: 0 when the table was produced (failing laws are the findings,
# not an error); 2 when attncheck could not run as asked.
set -euo pipefail

seed=${1:-20261130}
[[ $# -gt 0 ]] && shift
attncheck=${ATTNCHECK:-build/attncheck}
plugin=${PLUGIN:-build/plugins/libtorch_attention.so}

for f in "$attncheck" "$plugin"; do
  if [[ ! -e $f ]]; then
    echo "findings.sh: $f not found (build with: cmake --preset default && cmake --build build)" >&2
    exit 2
  fi
done

if [[ -n ${JSON_DIR:-} ]]; then
  mkdir -p "$JSON_DIR"
  dir=$JSON_DIR
else
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
fi

# Runs one check; exit 0 (all pass) and 1 (a law failed) both give a report.
run_check() {
  local json=$1
  shift
  local rc=0
  "$attncheck" check --plugin "$plugin" --seed "$seed" --json "$json" "$@" >"$json.log" 2>&1 || rc=$?
  if [[ $rc -ne 0 && $rc -ne 1 ]]; then
    echo "findings.sh: attncheck check exited $rc:" >&2
    cat "$json.log" >&2
    exit 2
  fi
}

start=$(date +%s.%N)
run_check "$dir/catalogue.json" "$@"
mid=$(date +%s.%N)
run_check "$dir/nan_propagates.json" --law nan_propagates "$@"
end=$(date +%s.%N)

python3 - "$dir/catalogue.json" "$dir/nan_propagates.json" "$start" "$mid" "$end" <<'PY'
import json, sys

def cell(text):
    # One table cell: no newlines, no unescaped pipes.
    return " ".join(str(text or "").split()).replace("|", "\\|")

reports = [json.load(open(p)) for p in sys.argv[1:3]]
start, mid, end = (float(t) for t in sys.argv[3:6])
impl = reports[0]["implementations"][0]
print(f"Implementation `{impl['name']}` ({cell(impl['source'])}), seed {reports[0]['seed']}; "
      f"whole catalogue {mid - start:.1f} s, nan_propagates {end - mid:.1f} s (wall clock).")
print()
print("| law | status | message | diagnosis |")
print("|---|---|---|---|")
for i, report in enumerate(reports):
    for law in report["implementations"][0]["laws"]:
        name = law["law"] + (" (opt-in)" if i == 1 else "")
        status = law["status"].upper() if law["status"] == "fail" else law["status"]
        print(f"| {name} | {status} | {cell(law.get('message'))} | {cell(law.get('diagnosis'))} |")
PY
