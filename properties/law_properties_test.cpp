// Every law against every built-in reference: each must hold on every case.
// One GoogleTest per (law, implementation), named Law/Implementation.
#include <gtest/gtest.h>

#include <algorithm>

#include "impls/builtins.h"
#include "impls/in_process.h"
#include "laws/law.h"
#include "property_env.h"

namespace attncheck {
namespace {

struct LawOnImpl {
  std::string law, impl;
};
// Readable parameters in test listings ("matches_oracle on online").
void PrintTo(const LawOnImpl& p, std::ostream* os) { *os << p.law << " on " << p.impl; }

std::vector<LawOnImpl> all_pairs() {
  std::vector<LawOnImpl> pairs;
  for (const Law& law : all_laws())
    for (const BuiltinInfo& b : builtins())
      if (b.kind == BuiltinKind::reference) pairs.push_back({law.name, std::string(b.name)});
  return pairs;
}

class LawHolds : public ::testing::TestWithParam<LawOnImpl> {};

TEST_P(LawHolds, OnReference) {
  const Law* law = find_law(GetParam().law);
  ASSERT_NE(law, nullptr);
  auto impl = make_builtin(GetParam().impl);
  ASSERT_NE(impl, nullptr);
  const RunOptions options = testing::property_options();
  const LawReport r = run_law(*law, *impl, options);
  EXPECT_NE(r.status, LawStatus::fail)
      << law->name << " failed on " << impl->name() << ": " << r.message << "\n"
      << (r.counterexample ? r.counterexample->describe() : "") << testing::save_counterexample(r, *impl, options);
  EXPECT_FALSE(r.fault_case) << "process fault: " << r.fault_message;
  if (r.status == LawStatus::skipped) GTEST_SKIP() << r.message;
  // The floor `attncheck check` demands before a law passes (--min-judged 20,
  // or the case count when smaller): a reference that only got through a few
  // cases has not earned the pass either.
  const int floor = std::min(20, options.cases);
  EXPECT_EQ(r.status, LawStatus::pass) << r.message;
  EXPECT_GE(r.judged, floor) << law->name << " judged " << r.judged << " of " << r.cases << " drawn on "
                             << impl->name() << ": " << r.message;
}

INSTANTIATE_TEST_SUITE_P(Laws, LawHolds, ::testing::ValuesIn(all_pairs()),
                         [](const ::testing::TestParamInfo<LawOnImpl>& info) {
                           return info.param.law + "_" + info.param.impl;
                         });

}  // namespace
}  // namespace attncheck
