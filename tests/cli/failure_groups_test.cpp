// Issue #34, "one root cause fans out to 6 to 8 failing laws": the reports
// group an implementation's failing laws that share a diagnosis or a shrunk
// case (report/failure_groups.h), most direct law first, under one header
// line on the console, as "failure_groups" in the JSON, a section of the
// Markdown summary and a line of each JUnit failure.
#include <gtest/gtest.h>

#include <sstream>

#include "law_framework/law.h"
#include "report/console_report.h"
#include "report/failure_groups.h"
#include "report/json_report.h"
#include "report/junit_report.h"
#include "report/markdown_report.h"

namespace attncheck {
namespace {

Problem small_case(double v0) {
  Problem p = make_problem(DType::f32, {1, 1, 1, 2, 1, 1}, Causal::none, NAN);
  p.q = {1};
  p.k = {0, 1};
  p.v = {v0, 2};
  return p;
}

LawResult failing(const std::string& law, const std::string& diagnosis, std::optional<Problem> c) {
  LawResult l;
  l.run.law = law;
  l.run.status = LawStatus::fail;
  l.run.message = law + " broke";
  l.run.diagnosis = diagnosis;
  l.run.counterexample = std::move(c);
  l.run.cases = l.run.judged = 3;
  return l;
}

// In catalogue order: key_permutation_invariance and matches_oracle share a
// fault model (seen on different derived problems), weights_sum_to_one
// shares key_permutation_invariance's shrunk case, deterministic stands alone,
// value_linearity passed, single_key_passthrough failed as declared.
ImplementationResult fanned_out() {
  ImplementationResult i;
  i.name = "mine";
  i.source = "plugin:./libmine.so";
  i.laws.push_back(failing("weights_sum_to_one", "", small_case(1)));
  i.laws.push_back(failing("matches_oracle", "behaves like: attention without the scale", small_case(5)));
  i.laws.push_back(failing("deterministic", "measured: something else", small_case(7)));
  LawResult pass;
  pass.run.law = "value_linearity";
  pass.run.judged = pass.run.cases = 100;
  i.laws.push_back(pass);
  i.laws.push_back(failing("key_permutation_invariance", "behaves like: attention without the scale (seen with a mask)",
                           small_case(1)));
  LawResult declared = failing("single_key_passthrough", "behaves like: attention without the scale", small_case(1));
  declared.expected_failure = "known";
  i.laws.push_back(declared);
  return i;
}

TEST(FailureGroups, ShareADiagnosisOrACaseMostDirectFirst) {
  const ImplementationResult i = fanned_out();
  const std::vector<FailureGroup> g = failure_groups(i);
  ASSERT_EQ(g.size(), 2u);
  // The group of three, placed by its first law in the catalogue (weights_sum_to_one),
  // ordered oracle, exact value, two calls.
  EXPECT_EQ(g[0].laws, (std::vector<std::size_t>{1, 0, 4}));
  EXPECT_TRUE(g[0].same_diagnosis);
  EXPECT_TRUE(g[0].same_case);
  EXPECT_EQ(g[0].diagnosis, "behaves like: attention without the scale");
  EXPECT_EQ(g[1].laws, (std::vector<std::size_t>{2}));  // deterministic alone; the declared failure is not grouped
}

TEST(FailureGroups, DiagnosisKeyDropsWhereItWasSeen) {
  EXPECT_EQ(diagnosis_key("behaves like: K and V swapped (logits from q.v) (seen with a mask)"),
            "behaves like: K and V swapped (logits from q.v)");
  EXPECT_EQ(diagnosis_key("behaves like: K and V swapped (logits from q.v)"),
            "behaves like: K and V swapped (logits from q.v)");
  EXPECT_EQ(diagnosis_key("measured: errors like 12-bit accumulation (seen x)"),
            "measured: errors like 12-bit accumulation (seen x)");
}

// The order rests on each law's kind: the oracle laws and the process laws of
// the catalogue are named so, and every law has a kind.
TEST(FailureGroups, EveryLawOfTheCatalogueHasItsKind) {
  for (const Law& law : all_laws()) {
    const Directness d = law_directness(law.name);
    if (law.is_process_law()) EXPECT_EQ(d, Directness::process) << law.name;
    else EXPECT_NE(d, Directness::process) << law.name;
    EXPECT_EQ(d == Directness::oracle, law.name.ends_with("matches_oracle")) << law.name;
  }
  EXPECT_EQ(law_directness("weights_sum_to_one"), Directness::exact_value);
  EXPECT_EQ(law_directness("key_permutation_invariance"), Directness::two_calls);
}

TEST(FailureGroups, ConsoleShowsOneHeaderThenTheGroup) {
  RunReport r;
  r.implementations.push_back(fanned_out());
  std::ostringstream out;
  print_failures(r, out);
  const std::string text = out.str();
  const std::string header =
      "likely one cause (same diagnosis, same shrunk case): 3 failing laws of mine, most direct first:";
  ASSERT_NE(text.find(header), std::string::npos) << text;
  EXPECT_EQ(text.find(header), text.rfind(header)) << text;
  EXPECT_LT(text.find(header), text.find("FAIL matches_oracle")) << text;
  const std::size_t a = text.find("FAIL matches_oracle"), b = text.find("FAIL weights_sum_to_one"),
                    c = text.find("FAIL key_permutation_invariance"), d = text.find("FAIL deterministic");
  EXPECT_TRUE(a < b && b < c && c < d) << text;
  EXPECT_EQ(text.find("likely one cause", text.find(header) + 1), std::string::npos) << text;  // not for deterministic
}

TEST(FailureGroups, JsonMarkdownAndJunitCarryTheGroup) {
  RunReport r;
  r.implementations.push_back(fanned_out());
  const nlohmann::ordered_json j = report_to_json(r);
  const nlohmann::ordered_json& g = j["implementations"][0]["failure_groups"];
  ASSERT_EQ(g.size(), 1u) << j.dump(2);
  EXPECT_EQ(g[0]["laws"], nlohmann::ordered_json({"matches_oracle", "weights_sum_to_one", "key_permutation_invariance"}));
  EXPECT_EQ(g[0]["directness"], nlohmann::ordered_json({"oracle", "exact_value", "two_calls"}));
  EXPECT_EQ(g[0]["same_diagnosis"], true);
  EXPECT_EQ(g[0]["same_case"], true);
  EXPECT_EQ(g[0]["diagnosis"], "behaves like: attention without the scale");
  // No group, no field: a passing implementation's JSON is as before.
  RunReport clean;
  clean.implementations.push_back(fanned_out());
  clean.implementations[0].laws.resize(1);
  EXPECT_FALSE(report_to_json(clean)["implementations"][0].contains("failure_groups"));

  const std::string md = report_to_markdown(r);
  EXPECT_NE(md.find("### Likely one cause"), std::string::npos) << md;
  EXPECT_NE(md.find("most direct first: matches\\_oracle, weights\\_sum\\_to\\_one, key\\_permutation\\_invariance"),
            std::string::npos)
      << md;
  const std::string xml = report_to_junit(r);
  EXPECT_NE(xml.find("likely one cause with: weights_sum_to_one, key_permutation_invariance (same diagnosis, same "
                     "shrunk case); most direct first: matches_oracle"),
            std::string::npos)
      << xml;
}

}  // namespace
}  // namespace attncheck
