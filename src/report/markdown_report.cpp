#include "report/markdown_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string_view>

#include "report/failure_groups.h"
#include "text/printable_text.h"

namespace attncheck {
namespace {

// The row a law result sits in: the law, or in a replay the law and its case file.
std::string row_key(const LawResult& l) {
  return l.replayed_file.empty() ? l.run.law : l.run.law + " " + l.replayed_file;
}

std::string cell(const ImplementationResult& impl, const LawResult& l) {
  const std::string n = std::string(" ").append(std::to_string(l.run.judged));  // (GCC 12 -Wrestrict bug 105329)
  if (l.refused) return "❌ error (refused)";
  if (impl.expectation == Expectation::must_be_caught && l.failed()) return "❌ caught" + n;
  if (l.expected_fail()) return "⚠️ expected fail" + n;
  if (l.unexpected_pass()) return "❌ unexpected pass" + n;
  switch (l.run.status) {
    case LawStatus::pass:
      return "✅" + n;
    case LawStatus::fail:
      return "❌ fail" + n;
    case LawStatus::insufficient:
      return (impl.insufficient_fails ? "❌ insufficient" : "⚠️ insufficient") + n;
    case LawStatus::skipped:
      return "⏭️ skipped";
  }
  return "?";
}

// One line of text: line breaks become spaces, then every control, bidi
// override and byte that is not UTF-8 is escaped (printable_text.h), so
// nothing a plugin or a file name holds can end a table row or reorder it.
std::string one_line(const std::string& text) {
  std::string s = text;
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  return printable(s);
}

// Inline code: a backtick run longer than any in the text delimits it. In a
// code span nothing is markup, so only line breaks and pipes need care.
std::string code(const std::string& text) {
  std::string oneline = one_line(text);
  std::replace(oneline.begin(), oneline.end(), '|', ' ');  // a pipe would end a table cell
  std::size_t longest = 0, run = 0;
  for (char c : oneline) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string ticks(longest + 1, '`');
  return ticks + " " + oneline + " " + ticks;
}

std::string short_number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

// The grade beside the verdict (docs/tolerance.md, "The typical error"): one
// row per implementation and graded dtype; in a default run the references' only.
std::string accuracy_markdown(const RunReport& report) {
  std::ostringstream md;
  bool header = false;
  for (const ImplementationResult& i : report.implementations) {
    if (report.default_run && i.expectation != Expectation::must_pass) continue;
    for (const AccuracyGrade& g : i.accuracy()) {
      if (!header)
        md << "\n### Accuracy\n\nErrors against the oracle on the cases where the typical-error model holds "
              "(Gaussian draws; docs/tolerance.md): per case, the root-mean-square of error / the typical error of "
              "a careful kernel of the dtype, the worst element in ulps and as a fraction of the bound; median and "
              "p99 over the cases.\n\n"
              "| implementation | dtype | x a careful kernel (median) | (p99) | worst ulp (median) | (p99) | of the "
              "bound (median) | (p99) | cases |\n|---|---|---|---|---|---|---|---|---|\n";
      header = true;
      md << "| " << markdown_cell(i.name) << " | " << dtype_name(g.dtype) << " | " << short_number(g.typical_median)
         << "x | " << short_number(g.typical_p99) << "x | " << short_number(g.ulps_median) << " | "
         << short_number(g.ulps_p99) << " | " << short_number(g.bound_median) << " | " << short_number(g.bound_p99)
         << " | " << g.cases << " |\n";
    }
  }
  return md.str();
}

}  // namespace

std::string markdown_cell(const std::string& text) {
  // Every ASCII punctuation character Markdown (CommonMark, GitHub's tables,
  // strikethrough and math) reads as markup is backslash-escaped: emphasis,
  // code, links and images, raw HTML and entities, table cells.
  static constexpr std::string_view kMarkup = "\\`*_[]<>|&!~$#";
  std::string out;
  for (char c : one_line(text)) {
    if (kMarkup.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string report_to_markdown(const RunReport& report) {
  std::ostringstream md;
  bool any_failure = report.default_run ? !report.expectations_held() : report.any_failure();
  if (report.shard) {
    // One shard's part (check --shard): never a pass of the run, which the merge of every shard gives.
    const ShardRecord& s = *report.shard;
    bool failed_here = false;  // a zoo member's catch may be another shard's: only a reference's failure counts
    for (const ImplementationResult& i : report.implementations)
      failed_here = failed_here || (i.failed() && (!report.default_run || i.expectation == Expectation::must_pass));
    md << "## attncheck check, shard " << s.index << "/" << s.count << ": " << s.ran.size() << " of "
       << s.items << " work items, " << (s.ran.empty() ? "nothing checked here" : failed_here ? "❌ FAIL here" : "no failure here")
       << " (the run's verdict: attncheck merge)\n\n";
  } else {
    // Nothing checked (a replay shard with no case file of its own) is not a pass.
    md << "## attncheck " << (report.replay ? "replay" : "check") << ": "
       << (any_failure ? "❌ FAIL" : report.implementations.empty() ? "nothing checked" : "✅ pass") << "\n\n";
  }
  // A replay draws nothing: its cases are the files, so no seed or profile.
  if (!report.replay) md << "seed " << report.seed << ", profile " << markdown_cell(report.profile) << ", ";
  if (!report.timestamp.empty()) md << report.timestamp << " UTC";
  if (report.wall_seconds >= 0) md << ", " << static_cast<long long>(report.wall_seconds * 10) / 10.0 << " s (wall time)";
  md << "\n\n";
  if (!report.interrupted.empty()) md << "**" << report.interrupted << "**: the laws not finished are marked not run\n\n";

  std::vector<std::string> rows;
  for (const ImplementationResult& i : report.implementations)
    for (const LawResult& l : i.laws)
      if (std::find(rows.begin(), rows.end(), row_key(l)) == rows.end()) rows.push_back(row_key(l));
  md << "| " << (report.replay ? "case" : "law") << " |";
  for (const ImplementationResult& i : report.implementations) md << " " << markdown_cell(i.name) << " |";
  md << "\n|---|";
  for (std::size_t k = 0; k < report.implementations.size(); ++k) md << "---|";
  md << "\n";
  for (const std::string& row : rows) {
    md << "| " << markdown_cell(row) << " |";
    for (const ImplementationResult& i : report.implementations) {
      const auto it = std::find_if(i.laws.begin(), i.laws.end(), [&](const LawResult& l) { return row_key(l) == row; });
      md << " " << (it == i.laws.end() ? "" : cell(i, *it)) << " |";
    }
    md << "\n";
  }
  md << "| **verdict** |";
  for (const ImplementationResult& i : report.implementations) {
    if (report.default_run)
      md << " " << (i.expectation_held() ? "✅ as expected" : "❌ expectation broken") << " |";
    else
      md << " " << (i.failed() ? "❌ **fail**" : "✅ **pass**") << " |";
  }
  md << "\n\nCells: the verdict and the cases it rests on (judged). ⚠️ expected fail: a declared known failure "
        "(--expect-fail, --config, a case file's \"expect\"), not counted against the verdict.\n";

  for (const ImplementationResult& i : report.implementations) {
    if (i.not_checked.empty()) continue;
    std::string what;
    for (const std::string& n : i.not_checked) what += (what.empty() ? "" : ", ") + n;
    md << "\n**Not checked**: **" << markdown_cell(i.name) << "** declares what this version of attncheck does "
       << "not check yet, so its verdict covers none of it: " << markdown_cell(what) << "\n";
  }

  md << accuracy_markdown(report);

  bool header = false;
  for (const ImplementationResult& i : report.implementations)
    for (const LawResult& l : i.laws) {
      const bool shown = (l.failed() && !(report.default_run && i.expectation == Expectation::must_be_caught)) ||
                         l.unexpected_pass();
      if (!shown) continue;
      if (!header) md << "\n### Failures\n";
      header = true;
      md << "\n**" << markdown_cell(l.run.law) << "** on **" << markdown_cell(i.name) << "** ("
         << markdown_cell(i.source) << ")";
      if (l.expected_fail())
        md << ", expected" << (l.expected_failure->empty() ? "" : ": " + markdown_cell(*l.expected_failure));
      md << "\n\n";
      if (l.unexpected_pass()) {
        md << "- expected to fail, but every judged case obeyed the law: remove the expectation\n";
        continue;
      }
      md << "- message: " << markdown_cell(l.run.message) << "\n";
      if (!l.run.diagnosis.empty()) md << "- diagnosis: " << markdown_cell(l.run.diagnosis) << "\n";
      if (!l.replayed_file.empty()) md << "- case: " << code(l.replayed_file) << "\n";
      if (!l.case_file.empty()) md << "- case file: " << code(l.case_file) << "\n";
      if (!l.reproduce.empty()) md << "- reproduce: " << code(l.reproduce) << "\n";
    }
  md << failure_groups_markdown(report);  // failing laws that likely share one cause
  return md.str();
}

void write_markdown_report(const RunReport& report, const std::string& path) {
  write_text_file(path, report_to_markdown(report));
}

}  // namespace attncheck
