// The --markdown report: a GitHub job summary (append it to
// $GITHUB_STEP_SUMMARY, or attach it to a merge request). One table of
// implementations (columns) against laws (rows), a cell per verdict
// (✅ pass, ❌ fail, ⚠️ expected failure or too few cases, ⏭️ skipped, with
// the cases judged), a verdict row, then each failure: law, implementation,
// message, diagnosis, case file and the command that reproduces it. In a
// replay the rows are the case files.
//
// Example usage:
//   write_markdown_report(report, "summary.md");   // throws std::runtime_error naming the file
#pragma once

#include <string>

#include "report/run_report.h"

namespace attncheck {

std::string report_to_markdown(const RunReport& report);

void write_markdown_report(const RunReport& report, const std::string& path);

// One table cell: line breaks become spaces, '|' is escaped, and characters
// Markdown would read as markup ('<', '`', '*', '_', '[') are escaped.
std::string markdown_cell(const std::string& text);

}  // namespace attncheck
