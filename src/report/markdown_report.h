// The --markdown report: a GitHub job summary (append it to
// $GITHUB_STEP_SUMMARY, or attach it to a merge request). One table of
// implementations (columns) against laws (rows), a cell per verdict
// (✅ pass, ❌ fail, ⚠️ expected failure or too few cases, ⏭️ skipped, with
// the cases judged), a verdict row, then each failure: law, implementation,
// message, diagnosis, case file and the command that reproduces it. In a
// replay the rows are the case files. Every text from outside (names,
// messages, file names) goes through markdown_cell() or a code span.
//
// Example usage:
//   write_markdown_report(report, "summary.md");   // throws std::runtime_error naming the file
#pragma once

#include <string>

#include "report/run_report.h"

namespace attncheck {

std::string report_to_markdown(const RunReport& report);

void write_markdown_report(const RunReport& report, const std::string& path);

// Untrusted text (a name, a message, a file name) as one line of Markdown
// that shows as written: line breaks become spaces; controls, bidi overrides
// and bytes that are not UTF-8 are escaped as printable() does; and every
// character Markdown would read as markup (\ ` * _ [ ] < > | & ! ~ $ #) gets
// a backslash, so it can neither end a table cell nor inject HTML, a link or
// an image. Example: markdown_cell("a|b <img>") == "a\\|b \\<img\\>".
std::string markdown_cell(const std::string& text);

}  // namespace attncheck
