#include "report/report_formats.h"

#include "report/json_report.h"
#include "report/junit_report.h"
#include "report/markdown_report.h"

namespace attncheck {

namespace {
constexpr ReportFormat kFormats[] = {
    {"json", "--json", "write the JSON report here", "JSON", write_json_report},
    {"junit", "--junit", "write a JUnit XML report here (valid against Jenkins' junit-10.xsd)", "JUnit",
     write_junit_report},
    {"markdown", "--markdown", "write a Markdown summary here (e.g. for $GITHUB_STEP_SUMMARY)", "Markdown",
     write_markdown_report},
};
}  // namespace

std::span<const ReportFormat> report_formats() { return kFormats; }

}  // namespace attncheck
