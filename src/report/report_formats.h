// The report files `attncheck check` can write, one row per format: the CLI
// adds a flag for each row, validates its path, writes it after the run and
// repeats it in the printed rerun command. A new format is its writer
// (report/<format>_report.{h,cpp}) and one row in report_formats.cpp.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>

#include "report/run_report.h"

namespace attncheck {

struct ReportFormat {
  std::string_view key;    // "json": the key of CheckArgs::reports
  std::string_view flag;   // "--json"
  std::string_view help;   // for --help
  std::string_view title;  // "JSON", as in "wrote JSON report to r.json"
  // Writes the whole report to `path` (replacing it); throws std::runtime_error
  // naming the file and the cause when it cannot.
  void (*write)(const RunReport& report, const std::string& path);
};

// Every format, in the order the CLI lists and writes them.
std::span<const ReportFormat> report_formats();

// Where each requested report goes: format key -> path (absent or empty: not requested).
using ReportPaths = std::map<std::string, std::string, std::less<>>;

}  // namespace attncheck
