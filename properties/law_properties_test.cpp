// Every law against every built-in reference: each must hold on every case.
// One GoogleTest per (law, implementation), named Law/Implementation.
#include <gtest/gtest.h>

#include <algorithm>

#include "driver/law_run.h"  // kDefaultMinJudged: the CLI's --min-judged
#include "impls/builtins.h"
#include "impls/in_process.h"
#include "law_framework/law.h"
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
  // The options carry the floor `attncheck check` demands before a law passes
  // (--min-judged, or the case count when smaller): a reference that only got
  // through a few cases is insufficient, as in the CLI, not a pass.
  ASSERT_EQ(options.min_judged, std::min(kDefaultMinJudged, options.cases));
  EXPECT_EQ(r.status, LawStatus::pass) << law->name << " on " << impl->name() << " is "
                                       << law_status_name(r.status) << ": " << r.message;
  EXPECT_GE(r.judged, options.min_judged) << law->name << " judged " << r.judged << " of " << r.cases
                                          << " drawn on " << impl->name() << ": " << r.message;
}

// An implementation that answers only its first `answered` calls and refuses
// every later one (ATTNCHECK_UNSUPPORTED): a law judges a few cases and no more.
class AnswersAFew : public Implementation {
 public:
  AnswersAFew(std::unique_ptr<Implementation> inner, int answered) : inner_(std::move(inner)), left_(answered) {}
  std::string name() const override { return "answers_a_few"; }
  std::string source() const override { return "test"; }
  FeatureBits features() const override { return inner_->features(); }
  Outcome run(const Problem& p) override {
    if (left_ <= 0) {
      Outcome o;
      o.status = CallStatus::unsupported;
      o.message = "refused after the first calls";
      return o;
    }
    --left_;
    return inner_->run(p);
  }

 private:
  std::unique_ptr<Implementation> inner_;
  int left_;
};

// A law that judged a handful of cases on a correct implementation has not
// passed under the property options: it is insufficient, with the reason.
TEST(PropertyOptions, TooFewJudgedIsNotAPass) {
  const RunOptions options = testing::property_options();
  ASSERT_GE(options.cases, 10);
  AnswersAFew impl(make_builtin("reference"), 3);
  const LawReport r = run_law(*find_law("matches_oracle"), impl, options);
  EXPECT_GT(r.judged, 0);
  EXPECT_LE(r.judged, 3);
  EXPECT_EQ(r.status, LawStatus::insufficient) << law_status_name(r.status) << ": " << r.message;
  EXPECT_NE(r.message.find("fewer than the floor"), std::string::npos) << r.message;
}

INSTANTIATE_TEST_SUITE_P(Laws, LawHolds, ::testing::ValuesIn(all_pairs()),
                         [](const ::testing::TestParamInfo<LawOnImpl>& info) {
                           return info.param.law + "_" + info.param.impl;
                         });

}  // namespace
}  // namespace attncheck
