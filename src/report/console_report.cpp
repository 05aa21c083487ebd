#include "report/console_report.h"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <string>

#include "report/failure_groups.h"
#include "text/printable_text.h"

namespace attncheck {
namespace {

constexpr std::size_t kWidth = 100;

// Text from outside the program (an implementation's name and source, a
// plugin's message, a file name, a declared reason) as the console may show
// it: no control or bidi character reaches the terminal (printable_text.h).
std::string shown(const std::string& text) { return printable(text); }

// The SGR colour of a verdict word at the start of a cell ("PASS 100"), or
// nullptr: green passes, red failures and broken expectations, yellow what is
// neither (expected failures, too few cases).
const char* colour_of(std::string_view c) {
  if (c.starts_with("PASS") || c == "pass" || c == "yes") return "32";
  if (c.starts_with("FAIL") || c.starts_with("XPASS") || c == "fail" || c == "NO") return "31";
  if (c.starts_with("XFAIL") || c.starts_with("INSUF")) return "33";
  if (c.starts_with("skip")) return "2";
  return nullptr;
}

// `padded` with its first word coloured (the padding stays outside the escape,
// so columns line up as without colour).
std::string coloured(const std::string& padded, bool colour) {
  const char* sgr = colour ? colour_of(padded) : nullptr;
  if (!sgr) return padded;
  const std::size_t end = std::min(padded.find(' '), padded.size());
  return std::string("\033[").append(sgr).append("m").append(padded, 0, end).append("\033[0m").append(padded, end);
}

// "PASS 100": the verdict and the cases it rests on (judged, not drawn).
// XFAIL / XPASS: a declared expected failure that failed / passed (pytest's words).
std::string cell(const LawResult& l) {
  const std::string n = std::string(" ").append(std::to_string(l.run.judged));  // (GCC 12 -Wrestrict bug 105329)
  if (l.expected_fail()) return "XFAIL" + n;
  if (l.unexpected_pass()) return "XPASS" + n;
  switch (l.run.status) {
    case LawStatus::pass:
      return "PASS" + n;
    case LawStatus::fail:
      return "FAIL" + n;
    case LawStatus::insufficient:
      return "INSUF" + n;
    case LawStatus::skipped:
      return "skip";
  }
  return "?";
}

std::string joined(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : ", ") + w;
  return s;
}

// "q_len 8, kv_len 4096, head_dim 256, value_dim 72, batch 2, heads 2"
std::string extents(const Shape& s) {
  return "q_len " + std::to_string(s.q_len) + ", kv_len " + std::to_string(s.kv_len) + ", head_dim " +
         std::to_string(s.head_dim) + ", value_dim " + std::to_string(s.value_dim) + ", batch " +
         std::to_string(s.batch) + ", heads " + std::to_string(s.heads);
}

// What one implementation's verdict covers: laws passed, cases judged, the
// largest shapes and the dtypes; the insufficient and skipped laws by name.
std::string coverage(const ImplementationResult& i) {
  std::vector<std::string> dtypes, insufficient, skipped;
  for (DType t : i.judged_dtypes()) dtypes.emplace_back(dtype_name(t));
  for (const LawResult& l : i.laws) {
    if (l.insufficient()) insufficient.push_back(shown(l.run.law) + " (" + std::to_string(l.run.judged) + ")");
    if (l.skipped()) skipped.push_back(shown(l.run.law));
  }
  std::string s = shown(i.name) + ": " + std::to_string(i.count(LawStatus::pass)) + " of " + std::to_string(i.laws.size()) +
                  " laws passed on " + std::to_string(i.judged()) + " judged cases; largest " + extents(i.largest()) +
                  "; dtypes " + (dtypes.empty() ? std::string("none") : joined(dtypes));
  FeatureBits features = 0;
  for (const LawResult& l : i.laws) features |= l.run.features;
  // ABI v3's features (packed, paged, kv_formats) apart from version 2's: a reader asks which version's
  // calls were judged. Bits 11 to 13 are the ABI's; bit 16 is the backward bit here, not v3's
  // BROADCAST_KV, and gradients are version 2's.
  constexpr FeatureBits v3_bits = kPackedFeature | kPagedFeature | kKvFormatsFeature | kAlibiBatchFeature | kVViewFeature |
                                  kBroadcastKvFeature;
  if (features & ~kV1Features & ~v3_bits) s += "; ABI v2 features " + feature_list(features & ~kV1Features & ~v3_bits);
  if (features & v3_bits) s += "; ABI v3 features " + feature_list(features & v3_bits);
  if (!i.accepted_shapes.empty()) s += "; accepts only " + shown(i.accepted_shapes);
  if (!i.not_checked.empty())
    s += "; NOT CHECKED by this version of attncheck, though declared (no law judges them yet, so the verdict "
         "covers none of them): " + joined(i.not_checked);
  if (!insufficient.empty())
    s += "; INSUFFICIENT" + std::string(i.insufficient_fails ? "" : " (allowed)") + ": " + joined(insufficient);
  if (!skipped.empty()) s += "; skipped: " + joined(skipped);
  return s;
}

// Laws in first-seen order over all implementations (a fault may add a
// process law to one implementation only).
std::vector<std::string> law_rows(const RunReport& r) {
  std::vector<std::string> rows;
  for (const ImplementationResult& i : r.implementations)
    for (const LawResult& l : i.laws)
      if (std::find(rows.begin(), rows.end(), l.run.law) == rows.end()) rows.push_back(l.run.law);
  return rows;
}

const LawResult* find(const ImplementationResult& i, const std::string& law) {
  for (const LawResult& l : i.laws)
    if (l.run.law == law) return &l;
  return nullptr;
}

const char* expectation_words(Expectation e) {
  switch (e) {
    case Expectation::must_pass:
      return "must pass every law";
    case Expectation::must_be_caught:
      return "must be caught";
    case Expectation::none:
      break;
  }
  return "";
}

std::string indent(const std::string& text, const std::string& pad) {
  std::string out = pad;
  for (std::size_t k = 0; k < text.size(); ++k) {
    out += text[k];
    if (text[k] == '\n' && k + 1 < text.size()) out += pad;
  }
  if (out.empty() || out.back() != '\n') out += '\n';
  return out;
}

// Breaks `text` at spaces into lines of at most kWidth columns, each starting with `pad`.
std::string wrap(const std::string& text, const std::string& pad) {
  std::string out, line = pad;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (line.size() > pad.size() && line.size() + 1 + word.size() > kWidth) {
      out += line + "\n";
      line = pad + "  ";
    } else if (line.size() > pad.size()) {
      line += ' ';
    }
    line += word;
    start = end + 1;
  }
  return out + line + "\n";
}

// The calls the law built from the shrunk case and failed on (law.h,
// Verdict::calls), each with how it was built; one that is the case itself
// is named, not shown again.
void print_failing_calls(const LawReport& r, std::ostream& out) {
  for (std::size_t k = 0; k < r.failing_calls.size(); ++k) {
    const LawCall& c = r.failing_calls[k];
    out << (k == 0 ? "  failing call (" : "  compared with (") << shown(c.role) << "): " << shown(c.derivation) << "\n";
    if (!(r.counterexample && c.problem == *r.counterexample))
      out << indent(printable(c.problem.describe(), Newlines::keep), "    ");
  }
}

void print_one_failure(const ImplementationResult& i, const LawResult& l, std::ostream& out, bool colour) {
  if (l.unexpected_pass()) {
    out << coloured("XPASS", colour) << " " << shown(l.run.law) << " -- " << shown(i.name) << " (" << shown(i.source)
        << ")\n"
        << "  expected to fail" << (l.expected_failure->empty() ? "" : " (" + shown(*l.expected_failure) + ")")
        << ", but all " << l.run.judged << " judged cases obeyed the law: remove the expectation\n\n";
    return;
  }
  if (l.expected_fail()) {
    out << coloured("XFAIL", colour) << " " << shown(l.run.law) << " -- " << shown(i.name) << " (" << shown(i.source)
        << "), expected" << (l.expected_failure->empty() ? "" : ": " + shown(*l.expected_failure)) << "\n"
        << "  message:   " << shown(l.run.message) << "\n";
    if (!l.run.diagnosis.empty()) out << "  diagnosis: " << shown(l.run.diagnosis) << "\n";
    if (!l.reproduce.empty()) out << "  reproduce: " << shown(l.reproduce) << "\n";
    out << "\n";
    return;
  }
  out << coloured("FAIL", colour) << " " << shown(l.run.law) << " -- " << shown(i.name) << " (" << shown(i.source)
      << ")\n";
  out << "  message:   " << shown(l.run.message) << "\n";
  if (!l.run.diagnosis.empty()) out << "  diagnosis: " << shown(l.run.diagnosis) << "\n";
  if (!l.found_while.empty()) out << "  found while checking: " << shown(l.found_while) << "\n";
  if (!l.case_file.empty()) out << "  case file: " << shown(l.case_file) << "\n";
  if (l.run.counterexample) {
    if (l.found_while.empty())
      out << "  shrunk case (" << l.run.shrink_steps << " shrink steps):\n";
    else
      out << "  case (the call that faulted, as the law made it; a fault is not shrunk):\n";
    out << indent(printable(l.run.counterexample->describe(), Newlines::keep), "    ");
  }
  print_failing_calls(l.run, out);
  if (!l.reproduce.empty()) out << "  reproduce: " << shown(l.reproduce) << "\n";
  out << "\n";
}

// Failures and unexpected passes in the catalogue's order, except that the
// failures that likely share one cause (failure_groups.h) print together,
// where the group's first law would, under one header line, most direct first.
void print_grouped_failures(const ImplementationResult& i, std::ostream& out, bool colour) {
  const std::vector<FailureGroup> groups = failure_groups(i);
  std::vector<const FailureGroup*> group_of(i.laws.size(), nullptr);
  for (const FailureGroup& g : groups)
    for (std::size_t k : g.laws) group_of[k] = &g;
  std::vector<char> printed(i.laws.size(), 0);
  for (std::size_t k = 0; k < i.laws.size(); ++k) {
    if (printed[k] || !(i.laws[k].failed() || i.laws[k].unexpected_pass())) continue;
    const FailureGroup* g = group_of[k];
    if (g && g->laws.size() > 1) out << wrap(failure_group_header(i, *g), "");
    for (std::size_t m : g && g->laws.size() > 1 ? g->laws : std::vector<std::size_t>{k}) {
      print_one_failure(i, i.laws[m], out, colour);
      printed[m] = 1;
    }
  }
}

}  // namespace

void print_law_table(const RunReport& report, std::ostream& out, const ConsoleStyle& style) {
  const std::vector<std::string> rows = law_rows(report);
  std::size_t law_w = std::string("expectation held").size();
  for (const std::string& r : rows) law_w = std::max(law_w, shown(r).size());
  law_w += 2;
  // Full names as column headers when they fit, else numbers and a legend.
  std::vector<std::string> headers;
  std::size_t total = law_w;
  for (const ImplementationResult& i : report.implementations) {
    headers.push_back(shown(i.name));
    total += std::max<std::size_t>(4, headers.back().size()) + 1;
  }
  const bool legend = total > kWidth;
  if (legend) {
    out << "implementations:\n";
    for (std::size_t k = 0; k < report.implementations.size(); ++k) {
      const ImplementationResult& i = report.implementations[k];
      headers[k] = std::string("[").append(std::to_string(k + 1)).append("]");  // (not "[" + ...: GCC 12 -Wrestrict bug 105329)
      out << "  " << std::left << std::setw(5) << headers[k] << std::setw(22) << shown(i.name) << " " << shown(i.source);
      if (i.expectation != Expectation::none) out << ", " << expectation_words(i.expectation);
      out << "\n";
    }
    out << "\n";
  } else if (report.default_run) {
    for (const ImplementationResult& i : report.implementations)
      out << "  " << shown(i.name) << ": " << shown(i.source) << ", " << expectation_words(i.expectation) << "\n";
  }
  // A column is as wide as its header and its widest cell ("PASS 100").
  std::vector<std::size_t> widths;
  for (std::size_t k = 0; k < headers.size(); ++k) {
    std::size_t w = std::max<std::size_t>(4, headers[k].size());
    for (const LawResult& l : report.implementations[k].laws) w = std::max(w, cell(l).size());
    widths.push_back(w + 1);
  }

  // Cells are left-aligned under their headers; no trailing blanks.
  static const std::string header_label = "law";
  auto row = [&](const std::string& label, auto&& cell_of) {
    std::string line = label;
    line.resize(std::max(line.size() + 1, law_w), ' ');
    for (std::size_t k = 0; k < report.implementations.size(); ++k) {
      std::string c = cell_of(report.implementations[k]);
      c.resize(std::max(c.size() + 1, widths[k]), ' ');
      if (k + 1 == report.implementations.size())
        while (!c.empty() && c.back() == ' ') c.pop_back();
      line += coloured(c, style.colour && &label != &header_label);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  };
  row(header_label, [&](const ImplementationResult& i) { return headers[&i - report.implementations.data()]; });
  for (const std::string& law : rows)
    row(shown(law), [&](const ImplementationResult& i) -> std::string {
      const LawResult* l = find(i, law);
      return l ? cell(*l) : "-";
    });
  std::size_t table_w = law_w;
  for (std::size_t w : widths) table_w += w;
  out << std::string(std::min(kWidth, table_w - 1), '-') << "\n";
  row("verdict", [](const ImplementationResult& i) -> std::string { return i.failed() ? "fail" : "pass"; });
  if (report.default_run) {
    row("expected", [](const ImplementationResult& i) -> std::string {
      return i.expectation == Expectation::must_be_caught ? "fail" : "pass";
    });
    row("expectation held",
        [](const ImplementationResult& i) -> std::string { return i.expectation_held() ? "yes" : "NO"; });
  }
  bool declared = false;
  for (const ImplementationResult& i : report.implementations)
    for (const LawResult& l : i.laws) declared = declared || l.expected_failure.has_value();
  out << "PASS n: every one of the n judged cases obeyed the law; FAIL n: a case broke it (the n-th);"
         " INSUF n: only n judged, fewer than --min-judged, for any reason (refused or faulting calls, the"
         " budget); skip: the law cannot apply to what the implementation declares, or --skip-law";
  if (declared) out << "; XFAIL n: failed as expected (--expect-fail); XPASS n: expected to fail but passed";
  out << "\n\n";
}

// "accuracy: reference f32: 1.2x a careful f32 kernel (median), ...": the
// grade beside the verdict, one line per graded dtype (oracle/accuracy_grade.h).
static void print_accuracy(const ImplementationResult& i, std::ostream& out) {
  for (const AccuracyGrade& g : i.accuracy())
    out << wrap("accuracy: " + shown(i.name) + " " + std::string(dtype_name(g.dtype)) + ": " + accuracy_text(g), "  ");
}

void print_failures(const RunReport& report, std::ostream& out, const ConsoleStyle& style) {
  for (const ImplementationResult& i : report.implementations) {
    bool any = i.failed();
    for (const LawResult& l : i.laws) any = any || l.expected_fail();
    if (!any) continue;
    if (report.default_run && i.expectation == Expectation::must_be_caught) {
      const LawResult* best = i.most_telling_failure();
      std::string others;
      for (const LawResult& l : i.laws)
        if (l.failed() && &l != best) others += (others.empty() ? "" : ", ") + shown(l.run.law);
      out << "caught: " << shown(i.name) << " (" << shown(i.source) << ")\n";
      if (!others.empty()) out << wrap("also caught by: " + others, "  ");
      print_one_failure(i, *best, out, style.colour);
      continue;
    }
    print_grouped_failures(i, out, style.colour);
  }
}

void print_verdict(const RunReport& report, std::ostream& out, const ConsoleStyle& style) {
  if (report.default_run) {
    // The references' grades: a zoo member's accuracy says nothing a failure does not.
    for (const ImplementationResult& i : report.implementations)
      if (i.expectation == Expectation::must_pass) print_accuracy(i, out);
    std::vector<std::string> broken;
    for (const ImplementationResult& i : report.implementations) {
      if (i.expectation_held()) continue;
      if (i.expectation == Expectation::must_be_caught) {
        broken.push_back(shown(i.name) + " (zoo) was caught by no law");
      } else {
        std::string laws;
        for (const LawResult& l : i.laws)
          if (l.counts_as_failure() || (i.insufficient_fails && l.insufficient()) ||
              (l.skipped() && !l.skipped_as_not_applicable() && l.run.skip_reason != SkipReason::by_request))
            laws += (laws.empty() ? "" : ", ") + shown(l.run.law) +
                    (l.unexpected_pass() ? " passed, expected to fail"
                     : l.failed()        ? " failed"
                     : l.insufficient()  ? " judged too few cases"
                                         : " skipped");
        broken.push_back(shown(i.name) + " (reference): " + laws);
      }
    }
    if (broken.empty()) {
      out << "all expectations held: every reference passed every law that applies, "
             "and every zoo member was caught by at least one law\n";
    } else {
      out << "EXPECTATIONS BROKEN:\n";
      for (const std::string& b : broken) out << wrap(b, "  ");
    }
    return;
  }
  int failed_impls = 0, failed_laws = 0, insufficient_laws = 0, expected = 0, unexpected_passes = 0;
  for (const ImplementationResult& i : report.implementations) {
    failed_impls += i.failed();
    for (const LawResult& l : i.laws) {
      failed_laws += l.failed() && !l.expected_fail();
      expected += l.expected_fail();
      unexpected_passes += l.unexpected_pass();
    }
    if (i.insufficient_fails) insufficient_laws += i.count(LawStatus::insufficient);
    out << wrap("covered: " + coverage(i), "");
    print_accuracy(i, out);
  }
  std::size_t unchecked_impls = 0;
  for (const ImplementationResult& i : report.implementations) unchecked_impls += !i.not_checked.empty();
  // A pass never reads as covering what no law judged (the covered: lines name it).
  const std::string xfail = (expected ? "; " + std::to_string(expected) + " expected failure(s)" : "") +
                            (unchecked_impls ? "; " + std::to_string(unchecked_impls) +
                                                   " implementation(s) declare what this version of attncheck does "
                                                   "not check yet (NOT CHECKED above)"
                                             : "");
  if (failed_impls == 0)
    out << "verdict: " << coloured("pass", style.colour) << " (" << report.implementations.size()
        << " implementation(s); every law passed, or could not apply and was skipped" << xfail << ")\n";
  else
    out << "verdict: " << coloured("FAIL", style.colour) << " (" << failed_laws << " law failure(s)"
        << (unexpected_passes ? ", " + std::to_string(unexpected_passes) + " expected failure(s) that passed" : "")
        << (insufficient_laws ? ", " + std::to_string(insufficient_laws) + " law(s) with too few judged cases" : "")
        << " in " << failed_impls << " of " << report.implementations.size() << " implementation(s)" << xfail
        << ")\n";
}

}  // namespace attncheck
