// Every member of the bug zoo is caught, at any seed, by the laws pinned for
// it in its row (impls/builtins.cpp: the laws whose statement its fault breaks
// on almost every case); the founding faults by the laws named in the founding
// case. A new zoo member fails this test until its laws are pinned in its row,
// and a new law fails it until a zoo member is caught by it.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "diagnosis/diagnose.h"
#include "impls/builtins.h"
#include "impls/in_process.h"
#include "driver/law_run.h"
#include "law_framework/law.h"
#include "property_env.h"

namespace attncheck {
namespace {

std::vector<std::string> zoo_names() {
  std::vector<std::string> names;
  for (const BuiltinInfo& b : builtins())
    if (b.kind == BuiltinKind::zoo) names.emplace_back(b.name);
  return names;
}

class ZooMember : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooMember, IsCaughtByItsPinnedLaws) {
  auto impl = make_builtin(GetParam());
  ASSERT_NE(impl, nullptr);
  const BuiltinInfo* row = find_builtin(GetParam());
  ASSERT_NE(row, nullptr);
  ASSERT_FALSE(row->pinned_laws.empty())
      << GetParam() << " has no pinned laws: add the laws that must catch it to its row in impls/builtins.cpp";
  const RunOptions options = testing::property_options();
  for (std::string_view name : row->pinned_laws) {
    const Law* law = find_law(name);
    ASSERT_NE(law, nullptr) << name << " (pinned for " << GetParam() << ") is no law";
    const LawReport r = run_law(*law, *impl, options);
    EXPECT_EQ(r.status, LawStatus::fail) << GetParam() << " is no longer caught by " << name << ": " << r.message;
    // Its failing case is diagnosed as the row says (what `attncheck check` prints).
    if (r.status != LawStatus::fail || !r.counterexample || row->diagnosis.empty()) continue;
    const std::string d = diagnose(*make_builtin(GetParam()), *r.counterexample);
    EXPECT_NE(d.find(row->diagnosis), std::string::npos)
        << GetParam() << " / " << name << ": the diagnosis \"" << d << "\" lacks its row's \"" << row->diagnosis << "\"\n"
        << r.counterexample->describe();
  }
}

// The references are correct: nothing is known to catch them.
TEST(ZooRows, ReferencesPinNothing) {
  for (const BuiltinInfo& b : builtins())
    if (b.kind == BuiltinKind::reference) {
      EXPECT_TRUE(b.pinned_laws.empty()) << b.name;
      EXPECT_TRUE(b.diagnosis.empty()) << b.name;
    }
}

// Every law of the default catalogue can fail: some zoo member pins it, so
// the test above shows it failing (a law no member fails could be one that
// passes everything), and the embedded default, which runs every member,
// shows it failing too. The process laws judge a plugin as a program (a
// crash, a hang, a stray write); a built-in runs inside attncheck, so the
// misbehaving test plugins show those fail (tests/plugins, ctest -R
// cli_faulty-plugins), not the zoo. The opt-in laws are not run by the
// embedded default, where every member must be caught by a default law.
TEST(ZooRows, EveryLawIsPinnedByAMember) {
  std::set<std::string_view> pinned;
  for (const BuiltinInfo& b : builtins()) pinned.insert(b.pinned_laws.begin(), b.pinned_laws.end());
  int laws = 0;
  for (const Law& law : all_laws()) {
    if (law.is_process_law() || !law.in_default_catalogue) continue;
    ++laws;
    EXPECT_TRUE(pinned.count(law.name)) << law.name
                                        << " is pinned by no zoo member: add a member with a realistic fault it "
                                           "catches (src/impls/zoo/) and pin the law in that member's row";
  }
  EXPECT_GE(laws, 40);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooMember, ::testing::ValuesIn(zoo_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The founding case: the unscaled layer loses the query's influence and the
// "fix" no longer produces weights that sum to one.
TEST(FoundingCase, UnscaledLayerFailsQuerySensitivity) {
  auto impl = make_builtin("seed_unscaled");
  const LawReport r = run_law(*find_law("query_sensitivity"), *impl, testing::property_options());
  ASSERT_EQ(r.status, LawStatus::fail) << r.message;
  EXPECT_NE(r.message.find("head_dim"), std::string::npos) << r.message;
}

TEST(FoundingCase, SoftmaxBypassFailsWeightsOrHull) {
  auto impl = make_builtin("seed_softmax_bypass");
  const RunOptions o = testing::property_options();
  const LawReport sum = run_law(*find_law("weights_sum_to_one"), *impl, o);
  const LawReport hull = run_law(*find_law("output_in_value_hull"), *impl, o);
  EXPECT_TRUE(sum.status == LawStatus::fail || hull.status == LawStatus::fail);
}

}  // namespace
}  // namespace attncheck
