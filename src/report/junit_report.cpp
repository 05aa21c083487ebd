#include "report/junit_report.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <set>
#include <sstream>

#include "report/failure_groups.h"
#include "text/printable_text.h"

namespace attncheck {
namespace {

// Whether XML 1.0 allows code point `cp` in a document (its production Char:
// #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]).
// U+FFFE and U+FFFF are well-formed UTF-8 but not XML characters.
bool xml_char(uint32_t cp) {
  return cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) || (cp >= 0xE000 && cp <= 0xFFFD) ||
         (cp >= 0x10000 && cp <= 0x10FFFF);
}

std::string failure_body(const LawResult& l) {
  std::ostringstream b;
  b << l.run.message << "\n";
  if (!l.run.diagnosis.empty()) b << "diagnosis: " << l.run.diagnosis << "\n";
  if (!l.found_while.empty()) b << "found while checking: " << l.found_while << "\n";
  if (!l.case_file.empty()) b << "case file: " << l.case_file << "\n";
  if (!l.reproduce.empty()) b << "reproduce: " << l.reproduce << "\n";
  if (l.run.counterexample && l.found_while.empty())
    b << "shrunk case (" << l.run.shrink_steps << " shrink steps):\n" << l.run.counterexample->describe() << "\n";
  else if (l.run.counterexample)
    b << "case (the call that faulted, as the law made it; a fault is not shrunk):\n" << l.run.counterexample->describe() << "\n";
  // The calls the law built from the case and failed on (law.h, Verdict::calls), as the console prints them.
  for (std::size_t k = 0; k < l.run.failing_calls.size(); ++k) {
    const LawCall& c = l.run.failing_calls[k];
    b << (k == 0 ? "failing call (" : "compared with (") << c.role << "): " << c.derivation << "\n";
    if (!(l.run.counterexample && c.problem == *l.run.counterexample)) b << c.problem.describe() << "\n";
  }
  return b.str();
}

// How one law appears in the suite: "pass", "fail", "error" or "skipped", after the
// default run's expectations and the declared expected failures are applied.
struct Rendered {
  const char* outcome;
  const char* type;  // the <failure>/<skipped> type attribute
  std::string message;
  std::string body;
  std::string system_out;
};

std::string reason_words(const LawResult& l) {
  return l.expected_failure->empty() ? std::string() : " (" + *l.expected_failure + ")";
}

Rendered render_verdict(const ImplementationResult& impl, const LawResult& l) {
  // Not a law that failed but a run that could not happen (replay's damaged
  // case file, a plugin that would not load): JUnit's <error>.
  if (l.refused) return {"error", "refused", l.run.message, "", ""};
  if (impl.expectation == Expectation::must_be_caught && l.failed())
    return {"pass", "", "", "", "caught, as expected of a zoo member: " + failure_body(l)};
  if (impl.expectation == Expectation::must_pass && l.skipped() && !l.skipped_as_not_applicable() &&
      l.run.skip_reason != SkipReason::by_request)
    return {"fail", "skipped_reference", "a reference must pass every law that applies; skipped: " + l.run.message, "",
            ""};
  // An expected failure is neither green nor red: JUnit's nearest word is
  // <skipped> (pytest writes its xfail the same way), the failure in <system-out>.
  if (l.expected_fail())
    return {"skipped", "expected_fail", "expected failure" + reason_words(l) + ": " + l.run.message, "",
            "expected failure" + reason_words(l) + ": " + failure_body(l)};
  if (l.unexpected_pass())
    return {"fail", "unexpected_pass",
            "expected to fail" + reason_words(l) + ", but every judged case obeyed the law: remove the expectation",
            "", ""};
  if (l.failed()) {
    // The other failing laws that likely share its cause (failure_groups.h).
    const std::string note = failure_group_note(impl, static_cast<std::size_t>(&l - impl.laws.data()));
    return {"fail", "law_failed", l.run.message, failure_body(l) + (note.empty() ? "" : note + "\n"), ""};
  }
  if (l.insufficient() && impl.insufficient_fails)
    return {"fail", "insufficient", "insufficient: " + l.run.message, "", ""};
  if (l.insufficient()) return {"skipped", "insufficient", "insufficient (allowed): " + l.run.message, "", ""};
  if (l.skipped()) return {"skipped", "skipped", l.run.message, "", ""};
  return {"pass", "", "", "", ""};
}

// Every testcase says how many cases its verdict rests on (one that could
// not be run at all rests on none: its error says why).
Rendered render(const ImplementationResult& impl, const LawResult& l) {
  Rendered r = render_verdict(impl, l);
  if (l.refused) return r;
  const std::string count = "judged " + std::to_string(l.run.judged) + " of " + std::to_string(l.run.cases) +
                            " drawn cases\n";
  r.system_out = count + r.system_out;
  return r;
}

// Seconds as junit-10.xsd's SUREFIRE_TIME allows: digits and a decimal point,
// never an exponent ("1e-05" is refused), milliseconds kept.
std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s > 0 ? s : 0.0);
  return buf;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

// The testcase's name: the law, or in a replay the case file it replayed
// (several cases of one law on one implementation stay apart).
std::string testcase_name(const LawResult& l) {
  return l.replayed_file.empty() ? l.run.law : l.run.law + " " + l.replayed_file;
}

}  // namespace

std::string xml_escape(const std::string& text, bool attribute) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      // Only well-formed UTF-8 of an XML character is copied: anything else
      // (a surrogate, an overlong form, F5..FF, U+FFFE) would make the whole
      // file unreadable to the CI system, so it becomes '?'.
      uint32_t cp = 0;
      const std::size_t n = utf8_sequence(text, i, cp);
      if (n == 0 || !xml_char(cp)) {
        out += '?';
        i += n == 0 ? 1 : n;
      } else {
        out.append(text, i, n);
        i += n;
      }
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\n':
        out += attribute ? "&#10;" : "\n";
        break;
      case '\t':
        out += attribute ? "&#9;" : "\t";
        break;
      case '\r':
        out += "&#13;";
        break;
      default:
        out += (c < 0x20 || c == 0x7F) ? '?' : static_cast<char>(c);
    }
    ++i;
  }
  return out;
}

std::string report_to_junit(const RunReport& report) {
  std::ostringstream x;
  int all_tests = 0, all_failures = 0, all_errors = 0;
  double all_seconds = 0;
  std::ostringstream suites;
  const std::string host = xml_escape(host_name());
  // classname/name pairs must be unique (GitLab folds duplicates into one):
  // the CLI makes implementation names unique, and a name seen twice here
  // anyway (a report built by other code) gets a suffix.
  std::set<std::string> classnames;
  int id = 0;
  for (const ImplementationResult& impl : report.implementations) {
    std::ostringstream cases;
    int tests = 0, failures = 0, errors = 0, skipped = 0;
    std::string name = impl.name;
    for (int k = 2; !classnames.insert(name).second; ++k) name = impl.name + "#" + std::to_string(k);
    const std::string cls = xml_escape(name);
    for (const LawResult& l : impl.laws) {
      const Rendered r = render(impl, l);
      ++tests;
      cases << "    <testcase name=\"" << xml_escape(testcase_name(l)) << "\" classname=\"" << cls << "\" time=\""
            << seconds_text(l.seconds) << "\"";
      const std::string o = r.outcome;
      if (o == "pass" && r.system_out.empty()) {
        cases << "/>\n";
        continue;
      }
      cases << ">\n";
      if (o == "fail") {
        ++failures;
        cases << "      <failure message=\"" << xml_escape(r.message) << "\" type=\"" << r.type << "\">"
              << xml_escape(r.body.empty() ? r.message : r.body, false) << "</failure>\n";
      } else if (o == "error") {
        ++errors;
        cases << "      <error message=\"" << xml_escape(r.message) << "\" type=\"" << r.type << "\">"
              << xml_escape(r.message, false) << "</error>\n";
      } else if (o == "skipped") {
        ++skipped;
        cases << "      <skipped message=\"" << xml_escape(r.message) << "\" type=\"" << r.type << "\"/>\n";
      }
      if (!r.system_out.empty()) cases << "      <system-out>" << xml_escape(r.system_out, false) << "</system-out>\n";
      cases << "    </testcase>\n";
    }
    if (impl.expectation == Expectation::must_be_caught) {
      ++tests;
      cases << "    <testcase name=\"caught_by_a_law\" classname=\"" << cls << "\" time=\"0.000\"";
      if (impl.count(LawStatus::fail) > 0) {
        cases << "/>\n";
      } else {
        ++failures;
        cases << ">\n      <failure message=\"no law caught this member of the bug zoo\" type=\"not_caught\"/>\n"
              << "    </testcase>\n";
      }
    }
    all_tests += tests;
    all_failures += failures;
    all_errors += errors;
    all_seconds += impl.seconds;
    // junit-10.xsd: name, tests, failures and errors are required on a
    // testsuite; skipped, timestamp, hostname, id and package are allowed
    // there (and not on <testsuites>).
    suites << "  <testsuite name=\"" << cls << "\" tests=\"" << tests << "\" failures=\"" << failures
           << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\" time=\"" << seconds_text(impl.seconds) << "\"";
    if (!report.timestamp.empty()) suites << " timestamp=\"" << xml_escape(report.timestamp) << "\"";
    suites << " hostname=\"" << host << "\" id=\"" << id++ << "\" package=\"attncheck\">\n"
           << "    <properties>\n"
           << "      <property name=\"source\" value=\"" << xml_escape(impl.source) << "\"/>\n"
           << "      <property name=\"seed\" value=\"" << report.seed << "\"/>\n";
    // The grade beside the verdict, one property per graded dtype (oracle/accuracy_grade.h).
    for (const AccuracyGrade& g : impl.accuracy())
      suites << "      <property name=\"accuracy_" << dtype_name(g.dtype) << "\" value=\"" << xml_escape(accuracy_text(g))
             << "\"/>\n";
    // What it declares that no law judged: the suite's pass says nothing of it.
    if (!impl.not_checked.empty()) {
      std::string what;
      for (const std::string& n : impl.not_checked) what += (what.empty() ? "" : ", ") + n;
      suites << "      <property name=\"not_checked\" value=\""
             << xml_escape("declared but not checked by this version of attncheck: " + what) << "\"/>\n";
    }
    suites << "    </properties>\n"
           << cases.str() << "  </testsuite>\n";
  }
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<testsuites name=\"" << (report.replay ? "attncheck replay" : "attncheck") << "\" tests=\"" << all_tests
    << "\" failures=\"" << all_failures << "\" errors=\"" << all_errors << "\" time=\""
    << seconds_text(report.wall_seconds >= 0 ? report.wall_seconds : all_seconds) << "\">\n"
    << suites.str() << "</testsuites>\n";
  return x.str();
}

void write_junit_report(const RunReport& report, const std::string& path) {
  write_text_file(path, report_to_junit(report));
}

}  // namespace attncheck
