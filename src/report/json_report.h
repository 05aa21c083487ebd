// The --json report (docs/cli.md, pinned):
//   {"seed": N, "implementations": [{"name", "source", "verdict": "pass"|"fail",
//     "laws": [{"law", "status": "pass"|"fail"|"skipped", "cases", "message"?, "diagnosis"?, "case_file"?}]}]}
// Added fields (the contract allows additions): top level "mode" ("check" |
// "default") and, in the default run, "expectations_held"; per implementation
// "dtypes", "notes", "seconds" and, in the default run, "expectation" and
// "expectation_held"; per law "seconds" and, for a failure, "counterexample"
// (the case as text), "shrink_steps", "reproduce" and "found_while".
// Expected outcomes (run/expectations.h) extend "status" with "expected_fail"
// (it failed, as declared: not counted against the verdict) and
// "unexpected_pass" (declared to fail, it passed: counted as a failure);
// "fail" keeps its meaning, a failure nobody expected. Such a law carries
// "expected_failure": the reason. Top level "timestamp" (UTC, when the run
// started); `attncheck replay` writes "mode": "replay" and per case "replayed",
// the case file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "report/run_report.h"

namespace attncheck {

nlohmann::ordered_json report_to_json(const RunReport& report);

// "none" | "must_pass" | "must_be_caught": the report's "expectation".
const char* expectation_name(Expectation e);

// Writes the report to `path`, two-space indented; invalid UTF-8 in messages
// (a plugin's err text) is replaced, never a reason to lose the report.
// Throws std::runtime_error when the file cannot be written.
void write_json_report(const RunReport& report, const std::string& path);

}  // namespace attncheck
