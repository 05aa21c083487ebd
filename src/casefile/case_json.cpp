// Case records to and from JSON text (format: casefile/case_file.h). Reading
// trusts nothing: every size is checked against casefile/case_limits.h with
// overflow-safe products before a tensor is allocated, and every refusal
// names the file and the field.
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "casefile/case_file.h"
#include "casefile/case_json_v2.h"
#include "casefile/case_limits.h"
#include "casefile/case_reader.h"
#include "casefile/float_text.h"
#include "casefile/untrusted_json.h"

namespace attncheck {
namespace {

using nlohmann::json;

// A JSON string literal; invalid UTF-8 (an implementation's error text may
// hold any bytes) is replaced rather than refused.
std::string quoted(const std::string& s) { return json(s).dump(-1, ' ', false, json::error_handler_t::replace); }

// One tensor as a flat JSON array, one row of `cols` elements a line.
void write_tensor(std::ostringstream& os, const char* name, const std::vector<double>& t, int64_t cols, bool last) {
  os << "    \"" << name << "\": [";
  const bool rows = cols > 0 && !t.empty() && t.size() % static_cast<std::size_t>(cols) == 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (i == 0 || (rows && i % static_cast<std::size_t>(cols) == 0)) os << (i ? ",\n      " : "\n      ");
    else os << ", ";
    os << '"' << exact_float_text(t[i]) << '"';
  }
  os << (t.empty() ? "]" : "\n    ]") << (last ? "\n" : ",\n");
}

}  // namespace

std::string case_to_json(const CaseRecord& rec) {
  const Problem& p = rec.problem;
  // The lowest schema that holds the problem: a v1 problem's file is what it always was.
  const bool v2 = needs_schema_2(p);
  std::ostringstream os;
  os << "{\n  \"schema_version\": " << (v2 ? 2 : 1) << ",\n  \"law\": " << quoted(rec.law) << ",\n";
  // Written only when it is not the default, so a case that must pass reads as it always did.
  if (rec.expect != "pass") os << "  \"expect\": " << quoted(rec.expect) << ",\n";
  os << "  \"problem\": {\n"
     << "    \"dtype\": \"" << dtype_name(p.dtype) << "\",\n"
     << "    \"batch\": " << p.shape.batch << ",\n    \"heads\": " << p.shape.heads << ",\n";
  if (v2) write_kv_heads(os, p);
  os << "    \"q_len\": " << p.shape.q_len << ",\n    \"kv_len\": " << p.shape.kv_len << ",\n"
     << "    \"head_dim\": " << p.shape.head_dim << ",\n    \"value_dim\": " << p.shape.value_dim << ",\n"
     << "    \"causal\": \"" << causal_name(p.causal) << "\",\n    \"scale\": ";
  // A finite scale as a JSON number (shortest text that reads back to the
  // same double); the default and non-finite scales as strings.
  if (std::isnan(p.scale)) os << "\"default\"";
  else if (std::isinf(p.scale)) os << '"' << exact_float_text(p.scale) << '"';
  else os << json(p.scale).dump();
  os << ",\n";
  write_tensor(os, "q", p.q, p.shape.head_dim, false);
  write_tensor(os, "k", p.k, p.shape.head_dim, false);
  write_tensor(os, "v", p.v, p.shape.value_dim, false);
  os << "    \"mask\": ";
  if (p.mask.empty()) {
    os << "null";
  } else {
    os << '"';
    for (uint8_t m : p.mask) os << (m ? '1' : '0');
    os << '"';
  }
  if (v2) {
    os << ",\n";
    write_schema2_fields(os, p);
  }
  os << "\n  },\n  \"history\": {\n"
     << "    \"implementation\": " << quoted(rec.implementation) << ",\n"
     << "    \"source\": " << quoted(rec.source) << ",\n"
     << "    \"seed\": " << rec.seed << ",\n"
     << "    \"found_by\": " << quoted(rec.found_by) << ",\n"
     << "    \"message\": " << quoted(rec.message) << ",\n"
     << "    \"diagnosis\": " << quoted(rec.diagnosis) << ",\n"
     << "    \"date\": " << quoted(rec.date) << "\n  }\n}\n";
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
  const std::string dtype = r.string(pj, "problem.", "dtype", true);
  const auto dt = dtype_from_name(dtype);
  if (!dt) r.fail("problem.dtype \"" + dtype + "\" is not one of " + dtype_names());
  p.dtype = *dt;
  Shape& s = p.shape;
  s.batch = r.extent(pj, "batch");
  s.heads = r.extent(pj, "heads");
  s.q_len = r.extent(pj, "q_len");
  s.kv_len = r.extent(pj, "kv_len");
  s.head_dim = r.extent(pj, "head_dim");
  s.value_dim = r.extent(pj, "value_dim");
  if (rec.schema_version == 1) refuse_schema2_fields(r, pj);
  else s.kv_heads = read_kv_heads(r, pj, s);
  // Before any allocation: every tensor the call involves fits the limit.
  r.check_product("q", {s.batch, s.heads, s.q_len, s.head_dim});
  r.check_product("k", {s.batch, s.kv_head_count(), s.kv_len, s.head_dim});
  r.check_product("v", {s.batch, s.kv_head_count(), s.kv_len, s.value_dim});
  r.check_product("out", {s.batch, s.heads, s.q_len, s.value_dim});
  r.check_product("the logits (and mask)", {s.batch, s.heads, s.q_len, s.kv_len});

  const std::string causal = r.string(pj, "problem.", "causal", true);
  if (causal == "none") p.causal = Causal::none;
  else if (causal == "top_left") p.causal = Causal::top_left;
  else if (causal == "bottom_right") p.causal = Causal::bottom_right;
  else r.fail("problem.causal \"" + causal + "\" is not one of none, top_left, bottom_right");

  const json& scale = r.member(pj, "problem.", "scale");
  if (scale.is_number()) {
    p.scale = scale.get<double>();
  } else if (scale.is_string() && scale.get_ref<const std::string&>() != "default") {
    const auto x = parse_float_text(scale.get_ref<const std::string&>());
    if (!x || std::isnan(*x)) r.fail("problem.scale = " + shown(scale) + " is not a number or \"default\"");
    p.scale = *x;
  } else if (!scale.is_string()) {
    r.fail("problem.scale must be a number or \"default\", got " + shown(scale));
  }  // "default": NaN, as Problem holds it

  p.q = r.tensor(pj, "q", s.q_size(), p.dtype);
  p.k = r.tensor(pj, "k", s.k_size(), p.dtype);
  p.v = r.tensor(pj, "v", s.v_size(), p.dtype);

  if (rec.schema_version == 2) p.mask_broadcast = read_broadcast(r, pj, "mask_broadcast");
  auto mask = pj.find("mask");
  if (mask != pj.end() && !mask->is_null()) {
    if (!mask->is_string()) r.fail("problem.mask must be a string of '0'/'1' or null");
    const std::string& m = mask->get_ref<const std::string&>();
    if (static_cast<int64_t>(m.size()) != p.mask_broadcast.size(s))
      r.fail("problem.mask holds " + std::to_string(m.size()) + " characters but the shape " +
             (p.mask_broadcast.full() ? "needs " : "and mask_broadcast need ") + std::to_string(p.mask_broadcast.size(s)));
    p.mask.reserve(m.size());
    for (std::size_t i = 0; i < m.size(); ++i) {
      if (m[i] != '0' && m[i] != '1')
        r.fail("problem.mask[" + std::to_string(i) + "] is not '0' or '1'");
      p.mask.push_back(m[i] == '1' ? 1 : 0);
    }
  }

  if (rec.schema_version == 2) read_schema2_fields(r, pj, p);

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
