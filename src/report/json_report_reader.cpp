#include "report/json_report_reader.h"

#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "report/json_report.h"
#include "report/shard_json.h"

namespace attncheck {
namespace {

using json = nlohmann::json;

// One JSON object being read: each field taken once, by type; done() refuses
// any field nobody took (the writer never writes it: a damaged or foreign file).
class Fields {
 public:
  Fields(const json& j, std::string where, const std::string& file) : j_(j), where_(std::move(where)), file_(file) {
    if (!j.is_object()) fail("", "must be an object");
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw ReportReadError(file_ + ": " + path(key) + (path(key).empty() ? "" : ": ") + what);
  }
  std::string path(const std::string& key) const {
    return where_.empty() ? key : key.empty() ? where_ : where_ + "." + key;
  }
  bool has(const char* key) const { return j_.contains(key); }
  const json& get(const char* key) {
    auto it = j_.find(key);
    if (it == j_.end()) fail(key, "missing");
    taken_.insert(key);
    return *it;
  }
  std::string text(const char* key) {
    const json& v = get(key);
    if (!v.is_string()) fail(key, "must be a string, got " + v.dump());
    return v.get<std::string>();
  }
  std::string text_or(const char* key, const std::string& otherwise) { return has(key) ? text(key) : otherwise; }
  bool boolean(const char* key) {
    const json& v = get(key);
    if (!v.is_boolean()) fail(key, "must be true or false, got " + v.dump());
    return v.get<bool>();
  }
  uint64_t unsigned_integer(const char* key) {
    const json& v = get(key);
    if (!v.is_number_unsigned()) fail(key, "must be a whole number of 0 or more, got " + v.dump());
    return v.get<uint64_t>();
  }
  int integer(const char* key) {
    const json& v = get(key);
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (int64_t{1} << 31) - 1)
      fail(key, "must be a whole number from 0 to 2147483647, got " + v.dump());
    return static_cast<int>(v.get<int64_t>());
  }
  double number(const char* key) {
    const json& v = get(key);
    if (!v.is_number()) fail(key, "must be a number, got " + v.dump());
    return v.get<double>();
  }
  std::vector<std::string> texts(const char* key) {
    const json& v = get(key);
    if (!v.is_array()) fail(key, "must be an array of strings");
    std::vector<std::string> out;
    for (const json& e : v) {
      if (!e.is_string()) fail(key, "must be an array of strings, holds " + e.dump());
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  std::vector<DType> dtypes(const char* key) {
    std::vector<DType> out;
    for (const std::string& n : texts(key))
      if (const std::optional<DType> t = dtype_from_name(n))
        out.push_back(*t);
      else
        fail(key, "\"" + n + "\" is not a dtype (" + dtype_names() + ")");
    return out;
  }
  const json& array(const char* key) {
    const json& v = get(key);
    if (!v.is_array()) fail(key, "must be an array");
    return v;
  }
  void done() const {
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!taken_.count(it.key())) fail(it.key(), "is not a field of attncheck's JSON report");
  }
  const std::string& file() const { return file_; }

 private:
  const json& j_;
  std::string where_;
  const std::string& file_;
  std::set<std::string> taken_;
};

std::string at(const std::string& where, std::size_t k) { return where + "[" + std::to_string(k) + "]"; }

Expectation expectation_of(Fields& f, const char* key) {
  const std::string name = f.text(key);
  for (Expectation e : {Expectation::none, Expectation::must_pass, Expectation::must_be_caught})
    if (name == expectation_name(e)) return e;
  f.fail(key, "\"" + name + "\" is not one of none, must_pass, must_be_caught");
}

// "status" as the writer names it: law_status_name, or expected_fail / unexpected_pass.
void read_status(Fields& f, LawResult& l) {
  const std::string status = f.text("status");
  const bool declared = f.has("expected_failure");
  if (declared) l.expected_failure = f.text("expected_failure");
  for (LawStatus s : {LawStatus::pass, LawStatus::fail, LawStatus::skipped, LawStatus::insufficient}) {
    l.run.status = s;
    if (l.status_name() == status) return;
  }
  f.fail("status", "\"" + status + "\" is not one of pass, fail, skipped, insufficient, expected_fail, " +
                       "unexpected_pass" + (declared ? "" : " (the last two only with \"expected_failure\")"));
}

// "accuracy": the writer's grades (json_report.cpp, accuracy_to_json), every field of each.
std::vector<AccuracyGrade> read_accuracy(Fields& f) {
  std::vector<AccuracyGrade> out;
  const json& a = f.array("accuracy");
  for (std::size_t k = 0; k < a.size(); ++k) {
    Fields g(a[k], at(f.path("accuracy"), k), f.file());
    AccuracyGrade x;
    const std::string name = g.text("dtype");
    if (const std::optional<DType> t = dtype_from_name(name))
      x.dtype = *t;
    else
      g.fail("dtype", "\"" + name + "\" is not a dtype (" + dtype_names() + ")");
    x.cases = g.integer("cases");
    const json& elements = g.get("elements");
    if (!elements.is_number_unsigned()) g.fail("elements", "must be a whole number of 0 or more, got " + elements.dump());
    x.elements = static_cast<int64_t>(elements.get<uint64_t>());
    auto pair = [&](const char* key, double& median, double& p99) {
      Fields q(g.get(key), g.path(key), f.file());
      // null: +inf, as nlohmann writes it (an output that was not finite where the exact one is).
      auto number_or_inf = [&](const char* k) {
        return q.has(k) && q.get(k).is_null() ? std::numeric_limits<double>::infinity() : q.number(k);
      };
      median = number_or_inf("median");
      p99 = number_or_inf("p99");
      q.done();
    };
    pair("typical_ratio", x.typical_median, x.typical_p99);
    pair("ulps", x.ulps_median, x.ulps_p99);
    pair("bound_fraction", x.bound_median, x.bound_p99);
    g.text("text");  // derived from the numbers
    g.done();
    out.push_back(x);
  }
  return out;
}

LawResult read_law(const json& j, const std::string& where, const std::string& file) {
  Fields f(j, where, file);
  LawResult l;
  l.run.law = f.text("law");
  read_status(f, l);
  l.run.cases = f.integer("cases");
  l.run.judged = f.integer("judged");
  if (f.has("features"))
    for (const std::string& n : f.texts("features")) {
      FeatureBits bit = 0;
      for (FeatureBits b = 1; b <= kLastFeatureBit; b <<= 1)
        if (feature_name(b) == n) bit = b;
      if (!bit) f.fail("features", "\"" + n + "\" is not a feature");
      l.run.features |= bit;
    }
  l.run.message = f.text_or("message", "");
  l.run.diagnosis = f.text_or("diagnosis", "");
  l.case_file = f.text_or("case_file", "");
  l.replayed_file = f.text_or("replayed", "");
  if (f.has("refused") && !(l.refused = f.boolean("refused"))) f.fail("refused", "is written only as true");
  l.seconds = f.number("seconds");
  if (f.has("accuracy")) l.run.accuracy = read_accuracy(f);
  if (l.failed()) {
    if (f.has("counterexample")) f.text("counterexample");  // its text; the tensors are not in the JSON
    // The calls the law built from the case, as text: each {role, derivation, call}.
    if (f.has("failing_calls")) {
      const json& calls = f.array("failing_calls");
      for (std::size_t k = 0; k < calls.size(); ++k) {
        Fields c(calls[k], at(f.path("failing_calls"), k), file);
        c.text("role");
        c.text("derivation");
        c.text("call");
        c.done();
      }
    }
    l.run.shrink_steps = f.integer("shrink_steps");
    l.reproduce = f.text_or("reproduce", "");
    l.found_while = f.text_or("found_while", "");
  }
  f.done();
  return l;
}

ImplementationResult read_implementation(const json& j, const std::string& where, const std::string& file,
                                         bool default_run) {
  Fields f(j, where, file);
  ImplementationResult i;
  i.name = f.text("name");
  i.source = f.text("source");
  const std::string verdict = f.text("verdict");
  i.dtypes = f.dtypes("dtypes");
  if (f.has("notes")) i.notes = f.texts("notes");
  i.accepted_shapes = f.text_or("accepted_shapes", "");
  if (f.has("not_checked")) i.not_checked = f.texts("not_checked");
  const int judged = f.integer("judged");
  i.seconds = f.number("seconds");
  if (default_run) {
    i.expectation = expectation_of(f, "expectation");
    f.boolean("expectation_held");
  }
  const json& laws = f.array("laws");
  for (std::size_t k = 0; k < laws.size(); ++k) i.laws.push_back(read_law(laws[k], at(f.path("laws"), k), file));
  // Derived from the laws (failure_groups_json.h; the grading law's accuracy) and written anew from them: taken, not kept.
  if (f.has("failure_groups")) f.array("failure_groups");
  if (f.has("accuracy")) f.array("accuracy");
  f.done();
  if (verdict != "pass" && verdict != "fail") f.fail("verdict", "\"" + verdict + "\" is not pass or fail");
  // An insufficient law fails the implementation unless --allow-insufficient: the verdict says which.
  i.insufficient_fails = verdict == "fail";
  if (i.failed() != (verdict == "fail")) f.fail("verdict", "\"" + verdict + "\" disagrees with the laws' statuses");
  if (i.judged() != judged)
    f.fail("judged", std::to_string(judged) + " is not the sum of the laws' (" + std::to_string(i.judged()) + ")");
  return i;
}

ShardRecord read_shard(const json& j, const std::string& file) {
  Fields f(j, "shard", file);
  ShardRecord s;
  s.index = f.integer("index");
  s.count = f.integer("count");
  if (s.count < 1 || s.index >= s.count)
    f.fail("index", std::to_string(s.index) + " of " + std::to_string(s.count) + " is not a shard (0 <= index < count)");
  s.version = f.text("version");
  s.settings = f.text("settings");
  s.allow_insufficient = f.boolean("allow_insufficient");
  s.items = f.unsigned_integer("items");
  auto bytes = [&](Fields& g, const char* key) {
    const std::optional<std::string> b = from_hex(g.text(key));
    if (!b) g.fail(key, "is not hex (two lowercase digits a byte)");
    return *b;
  };
  const json& plan = f.array("plan");
  for (std::size_t k = 0; k < plan.size(); ++k) {
    Fields p(plan[k], at("shard.plan", k), file);
    ShardPlanEntry e;
    e.name = p.text("name");
    e.source = p.text("source");
    e.expectation = expectation_of(p, "expectation");
    e.laws = p.texts("laws");
    e.skipped = p.texts("skipped");
    const json& reproduce = p.get("reproduce");
    if (!reproduce.is_object()) p.fail("reproduce", "must be an object of law: command");
    for (auto it = reproduce.begin(); it != reproduce.end(); ++it) {
      if (!it->is_string()) p.fail("reproduce." + it.key(), "must be a string");
      e.reproduce[it.key()] = it->get<std::string>();
    }
    const json& declared = p.array("declared");
    for (std::size_t d = 0; d < declared.size(); ++d) {
      Fields x(declared[d], at(p.path("declared"), d), file);
      e.declared.push_back({x.text("law"), x.text("reason"), x.boolean("strict")});
      x.done();
    }
    e.dtypes = p.dtypes("dtypes");
    e.accepted_shapes = p.text("accepted_shapes");
    e.probe_notes = p.texts("probe_notes");
    e.not_checked = p.texts("not_checked");
    e.probe_fault = bytes(p, "probe_fault");
    p.done();
    s.plan.push_back(std::move(e));
  }
  const json& ran = f.array("ran");
  for (std::size_t k = 0; k < ran.size(); ++k) {
    Fields r(ran[k], at("shard.ran", k), file);
    ShardItem i;
    i.implementation = r.unsigned_integer("implementation");
    i.position = r.unsigned_integer("position");
    i.law = r.text("law");
    i.result = bytes(r, "result");
    r.done();
    if (i.implementation >= s.plan.size() || i.position >= s.plan[i.implementation].laws.size() ||
        s.plan[i.implementation].laws[i.position] != i.law)
      r.fail("", "names no law of the plan (implementation " + std::to_string(i.implementation) + ", position " +
                     std::to_string(i.position) + ", law " + i.law + ")");
    s.ran.push_back(std::move(i));
  }
  s.budget_notes = f.texts("budget_notes");
  if (s.budget_notes.size() != s.plan.size()) f.fail("budget_notes", "must hold one entry per plan entry");
  f.done();
  return s;
}

}  // namespace

RunReport report_from_json(const json& j, const std::string& name) {
  Fields f(j, "", name);
  RunReport r;
  r.seed = f.unsigned_integer("seed");
  const std::string mode = f.text("mode");
  if (mode != "check" && mode != "default" && mode != "replay")
    f.fail("mode", "\"" + mode + "\" is not one of check, default, replay");
  r.default_run = mode == "default";
  r.replay = mode == "replay";
  r.timestamp = f.text_or("timestamp", "");
  if (f.has("wall_seconds")) r.wall_seconds = f.number("wall_seconds");
  r.interrupted = f.text_or("interrupted", "");
  r.profile = f.text("profile");
  f.get("shapes");  // derived from the laws' judged cases, which the JSON does not hold one by one
  if (r.default_run) f.boolean("expectations_held");
  const json& impls = f.array("implementations");
  for (std::size_t k = 0; k < impls.size(); ++k)
    r.implementations.push_back(read_implementation(impls[k], at("implementations", k), name, r.default_run));
  if (f.has("shard")) r.shard = read_shard(f.get("shard"), name);
  f.done();
  return r;
}

RunReport read_json_report(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ReportReadError(path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  json j;
  try {
    j = json::parse(text.str());
  } catch (const json::parse_error& e) {
    throw ReportReadError(path + ": not JSON (" + e.what() + ")");
  }
  return report_from_json(j, path);
}

}  // namespace attncheck
