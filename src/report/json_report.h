// The --json report (shared/spec/cli.md, pinned):
//   {"seed": N, "implementations": [{"name", "source", "verdict": "pass"|"fail",
//     "laws": [{"law", "status": "pass"|"fail"|"skipped", "cases", "message"?, "diagnosis"?, "case_file"?}]}]}
// Added fields (the contract allows additions): top level "mode" ("check" |
// "default") and, in the default run, "expectations_held"; per implementation
// "dtypes", "notes", "seconds" and, in the default run, "expectation" and
// "expectation_held"; per law "seconds" and, for a failure, "counterexample"
// (the case as text), "shrink_steps", "reproduce" and "found_while".
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "report/run_report.h"

namespace attncheck {

nlohmann::ordered_json report_to_json(const RunReport& report);

// Writes the report to `path`, two-space indented; invalid UTF-8 in messages
// (a plugin's err text) is replaced, never a reason to lose the report.
// Throws std::runtime_error when the file cannot be written.
void write_json_report(const RunReport& report, const std::string& path);

}  // namespace attncheck
