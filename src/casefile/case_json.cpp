// Case records to and from JSON text (format: casefile/case_file.h). Reading
// trusts nothing: every size is checked against casefile/case_limits.h with
// overflow-safe products before a tensor is allocated, and every refusal
// names the file and the field.
#include <nlohmann/json.hpp>
#include <sstream>

#include "casefile/case_file.h"
#include "casefile/case_json_problem.h"
#include "casefile/case_json_v2.h"
#include "casefile/case_limits.h"
#include "casefile/case_reader.h"
#include "casefile/untrusted_json.h"

namespace attncheck {
namespace {

using nlohmann::json;

// A JSON string literal; invalid UTF-8 (an implementation's error text may
// hold any bytes) is replaced rather than refused.
std::string quoted(const std::string& s) { return json(s).dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

std::string case_to_json(const CaseRecord& rec) {
  const Problem& p = rec.problem;
  // The lowest schema that holds the problem: a v1 problem's file is what it always was.
  const bool v2 = needs_schema_2(p);
  std::ostringstream os;
  os << "{\n  \"schema_version\": " << (v2 ? 2 : 1) << ",\n  \"law\": " << quoted(rec.law) << ",\n";
  // Written only when it is not the default, so a case that must pass reads as it always did.
  if (rec.expect != "pass") os << "  \"expect\": " << quoted(rec.expect) << ",\n";
  os << "  \"problem\": {\n";
  write_problem_json(os, p);
  os << "\n  },\n  \"history\": {\n"
     << "    \"implementation\": " << quoted(rec.implementation) << ",\n"
     << "    \"source\": " << quoted(rec.source) << ",\n"
     << "    \"seed\": " << rec.seed << ",\n"
     << "    \"found_by\": " << quoted(rec.found_by) << ",\n"
     << "    \"message\": " << quoted(rec.message) << ",\n"
     << "    \"diagnosis\": " << quoted(rec.diagnosis) << ",\n";
  // Only for a call the law derived from its case, so every other file reads as it always did.
  if (!rec.derivation.empty()) os << "    \"derivation\": " << quoted(rec.derivation) << ",\n";
  os << "    \"date\": " << quoted(rec.date) << "\n  }\n}\n";
  return os.str();
}

namespace {

// A name (a law, an implementation, a source) holds no control or bidi
// character and no byte that is not UTF-8: replay prints it and runs by it.
void refuse_unprintable(const CaseReader& r, const char* field, const std::string& value) {
  if (printable(value) != value)
    r.fail(std::string(field) + " \"" + value + "\" holds a control or bidi character or a byte that is not UTF-8");
}

}  // namespace

CaseRecord case_from_json(const std::string& text, const std::string& name_for_errors) {
  const CaseReader r(name_for_errors);
  if (static_cast<int64_t>(text.size()) > kMaxCaseFileBytes)
    r.fail("file of " + std::to_string(text.size()) + " bytes exceeds the limit of " +
           std::to_string(kMaxCaseFileBytes));
  json root;
  if (const std::string bad = parse_untrusted_json(text, root); !bad.empty()) r.fail(bad);
  if (!root.is_object()) r.fail("the top level must be a JSON object");

  CaseRecord rec;
  const json& version = r.member(root, "", "schema_version");
  if (!version.is_number_integer()) r.fail("schema_version must be an integer, got " + shown(version));
  if (!(version == 1 || version == 2))
    r.fail("schema_version " + shown(version) + " is not supported (this attncheck reads 1 and 2)");
  rec.schema_version = version.get<int>();
  rec.law = r.string(root, "", "law", true);
  if (rec.law.empty()) r.fail("law must not be empty");
  refuse_unprintable(r, "law", rec.law);
  if (auto e = root.find("expect"); e != root.end() && !e->is_null()) {
    if (!e->is_string() || (*e != "pass" && *e != "fail"))
      r.fail("expect must be \"pass\" or \"fail\", got " + shown(*e));
    rec.expect = e->get<std::string>();
  }

  const json& pj = r.member(root, "", "problem");
  if (!pj.is_object()) r.fail("problem must be a JSON object");
  Problem& p = rec.problem;
  read_problem_json(r, pj, rec.schema_version, p);

  auto history = root.find("history");
  if (history != root.end() && !history->is_null()) {
    const json& h = *history;
    if (!h.is_object()) r.fail("history must be a JSON object");
    rec.implementation = r.string(h, "history.", "implementation", false);
    rec.source = r.string(h, "history.", "source", false);
    rec.found_by = r.string(h, "history.", "found_by", false);
    rec.message = r.string(h, "history.", "message", false);
    rec.diagnosis = r.string(h, "history.", "diagnosis", false);
    rec.date = r.string(h, "history.", "date", false);
    rec.derivation = printable(r.string(h, "history.", "derivation", false));
    // Names attncheck wrote from what it printed: a control character here
    // means a damaged or hostile file, refused (the message shows it escaped).
    refuse_unprintable(r, "history.implementation", rec.implementation);
    refuse_unprintable(r, "history.source", rec.source);
    // A replay prints the diagnosis as the reason of an expected failure, on
    // one line: it is kept as printable() shows it.
    rec.diagnosis = printable(rec.diagnosis);
    if (!rec.found_by.empty() && rec.found_by != "rapidcheck" && rec.found_by != "libfuzzer" &&
        rec.found_by != "manual")
      r.fail("history.found_by \"" + rec.found_by + "\" is not one of rapidcheck, libfuzzer, manual");
    auto seed = h.find("seed");
    if (seed != h.end() && !seed->is_null()) {
      if (!seed->is_number_unsigned()) r.fail("history.seed must be a non-negative integer, got " + shown(*seed));
      rec.seed = seed->get<uint64_t>();
    }
  }

  if (const std::string bad = p.inconsistency(); !bad.empty()) r.fail("problem: " + bad);
  return rec;
}

}  // namespace attncheck
