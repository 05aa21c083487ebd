// Every member of the bug zoo is caught by at least one law with the default
// settings; the founding faults by the laws named in the founding case.
#include <gtest/gtest.h>

#include "impls/builtins.h"
#include "impls/in_process.h"
#include "laws/law.h"
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

TEST_P(ZooMember, IsCaughtBySomeLaw) {
  auto impl = make_builtin(GetParam());
  ASSERT_NE(impl, nullptr);
  const RunOptions options = testing::property_options();
  std::string caught_by;
  for (const Law& law : all_laws()) {
    const LawReport r = run_law(law, *impl, options);
    if (r.status == LawStatus::fail) {
      caught_by = law.name + ": " + r.message;
      break;
    }
  }
  EXPECT_FALSE(caught_by.empty()) << GetParam() << " passed every law";
  std::cout << GetParam() << " caught by " << caught_by << "\n";
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
