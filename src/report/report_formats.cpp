#include "report/report_formats.h"

#include "report/json_report.h"
#include "report/junit_report.h"

namespace attncheck {

namespace {
constexpr ReportFormat kFormats[] = {
    {"json", "--json", "write the JSON report here", "JSON", write_json_report},
    {"junit", "--junit", "write a JUnit XML report here", "JUnit", write_junit_report},
};
}  // namespace

std::span<const ReportFormat> report_formats() { return kFormats; }

}  // namespace attncheck
