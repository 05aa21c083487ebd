#include "report/json_report.h"

#include "report/failure_groups_json.h"
#include "report/shard_json.h"

namespace attncheck {
namespace {

// Extension: the accuracy grade (oracle/accuracy_grade.h), one object per graded dtype.
nlohmann::ordered_json accuracy_to_json(const std::vector<AccuracyGrade>& grades) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const AccuracyGrade& g : grades)
    a.push_back({{"dtype", std::string(dtype_name(g.dtype))},
                 {"cases", g.cases},
                 {"elements", g.elements},
                 {"typical_ratio", {{"median", g.typical_median}, {"p99", g.typical_p99}}},
                 {"ulps", {{"median", g.ulps_median}, {"p99", g.ulps_p99}}},
                 {"bound_fraction", {{"median", g.bound_median}, {"p99", g.bound_p99}}},
                 {"text", accuracy_text(g)}});
  return a;
}

nlohmann::ordered_json law_to_json(const LawResult& l) {
  nlohmann::ordered_json j;
  j["law"] = l.run.law;
  // Extension: "expected_fail" and "unexpected_pass" for a declared expected
  // failure (`fail` keeps its meaning: a failure nobody expected).
  j["status"] = std::string(l.status_name());
  j["cases"] = l.run.cases;
  j["judged"] = l.run.judged;
  // Extension: the ABI v2 features the judged cases used ("gqa", "strides", ...).
  if (l.run.features) {
    nlohmann::ordered_json f = nlohmann::ordered_json::array();
    for (FeatureBits b = 1; b <= kLastFeatureBit; b <<= 1)
      if (l.run.features & b) f.push_back(std::string(feature_name(b)));
    j["features"] = f;
  }
  if (!l.run.message.empty()) j["message"] = l.run.message;
  if (!l.run.diagnosis.empty()) j["diagnosis"] = l.run.diagnosis;
  if (!l.case_file.empty()) j["case_file"] = l.case_file;
  if (l.expected_failure) j["expected_failure"] = *l.expected_failure;  // the reason, possibly ""
  if (!l.replayed_file.empty()) j["replayed"] = l.replayed_file;
  if (l.refused) j["refused"] = true;  // extension: could not be run at all (status stays "fail")
  j["seconds"] = l.seconds;
  if (!l.run.accuracy.empty()) j["accuracy"] = accuracy_to_json(l.run.accuracy);
  if (l.failed()) {
    if (l.run.counterexample) j["counterexample"] = l.run.counterexample->describe();
    // Extension: the calls the law built from the case and failed on, with how (law.h, Verdict::calls).
    for (const LawCall& c : l.run.failing_calls)
      j["failing_calls"].push_back({{"role", c.role}, {"derivation", c.derivation}, {"call", c.problem.describe()}});
    j["shrink_steps"] = l.run.shrink_steps;
    if (!l.reproduce.empty()) j["reproduce"] = l.reproduce;
    if (!l.found_while.empty()) j["found_while"] = l.found_while;
  }
  return j;
}

}  // namespace

const char* expectation_name(Expectation e) {
  switch (e) {
    case Expectation::must_pass:
      return "must_pass";
    case Expectation::must_be_caught:
      return "must_be_caught";
    case Expectation::none:
      break;
  }
  return "none";
}

nlohmann::ordered_json report_to_json(const RunReport& report) {
  nlohmann::ordered_json root;
  root["seed"] = report.seed;
  root["mode"] = report.default_run ? "default" : report.replay ? "replay" : "check";
  if (!report.timestamp.empty()) root["timestamp"] = report.timestamp;
  // Extensions: the run's wall time (the implementations' and laws' seconds are their own), an interruption.
  if (report.wall_seconds >= 0) root["wall_seconds"] = report.wall_seconds;
  if (!report.interrupted.empty()) root["interrupted"] = report.interrupted;
  root["profile"] = report.profile;
  // What was drawn and judged: dtypes and the largest extents over every implementation.
  {
    Shape m{0, 0, 0, 0, 0, 0};
    std::vector<std::string> dtypes;
    for (const ImplementationResult& i : report.implementations) {
      m = largest_extents(m, i.largest());
      for (DType t : i.judged_dtypes())
        if (std::find(dtypes.begin(), dtypes.end(), dtype_name(t)) == dtypes.end()) dtypes.emplace_back(dtype_name(t));
    }
    root["shapes"] = {{"dtypes", dtypes}, {"q_len", m.q_len},   {"kv_len", m.kv_len}, {"head_dim", m.head_dim},
                      {"value_dim", m.value_dim}, {"batch", m.batch}, {"heads", m.heads}};
  }
  if (report.default_run) root["expectations_held"] = report.expectations_held();
  nlohmann::ordered_json impls = nlohmann::ordered_json::array();
  for (const ImplementationResult& i : report.implementations) {
    nlohmann::ordered_json j;
    j["name"] = i.name;
    j["source"] = i.source;
    j["verdict"] = i.failed() ? "fail" : "pass";
    nlohmann::ordered_json dtypes = nlohmann::ordered_json::array();
    for (DType t : i.dtypes) dtypes.push_back(std::string(dtype_name(t)));
    j["dtypes"] = dtypes;
    if (!i.notes.empty()) j["notes"] = i.notes;
    if (!i.accepted_shapes.empty()) j["accepted_shapes"] = i.accepted_shapes;
    // Extension: what it declares that no law of this attncheck judged (docs/reports.md).
    if (!i.not_checked.empty()) j["not_checked"] = i.not_checked;
    j["judged"] = i.judged();
    j["seconds"] = i.seconds;
    // Extension: the grade beside the verdict (the grading law's, repeated here).
    if (!i.accuracy().empty()) j["accuracy"] = accuracy_to_json(i.accuracy());
    if (report.default_run) {
      j["expectation"] = expectation_name(i.expectation);
      j["expectation_held"] = i.expectation_held();
    }
    nlohmann::ordered_json laws = nlohmann::ordered_json::array();
    for (const LawResult& l : i.laws) laws.push_back(law_to_json(l));
    j["laws"] = laws;
    // Extension: failing laws that likely share one cause (failure_groups_json.h).
    if (nlohmann::ordered_json g = failure_groups_to_json(i); !g.empty()) j["failure_groups"] = g;
    impls.push_back(j);
  }
  root["implementations"] = impls;
  if (report.shard) root["shard"] = shard_to_json(*report.shard);  // extension: check --shard (shard_json.h)
  return root;
}

void write_json_report(const RunReport& report, const std::string& path) {
  write_text_file(path,
                  report_to_json(report).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
}

}  // namespace attncheck
