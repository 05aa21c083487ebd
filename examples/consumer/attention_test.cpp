// The attention function tested from this project's own GoogleTest binary:
// ATTNCHECK_TEST registers one test per law (AttentionLaws.Scaled/<law>),
// with RapidCheck's generation and shrinking underneath. ATTNCHECK_SEED
// picks the seed; ATTNCHECK_REGRESSION_DIR collects failing cases.
#include <attncheck/gtest.hpp>

#include "attention.hpp"

namespace {

attncheck::Options options() {
  attncheck::Options o;
  o.name = "scaled_dot_product";
  o.cases = 50;  // per law; the CLI's default is 100
  return o;
}

ATTNCHECK_TEST_WITH(AttentionLaws, Scaled, options(), ScaledDotProductAttention{});

// The founding bug, asserted to be caught and diagnosed (attncheck::check
// returns the report, so a test can say what must fail).
TEST(AttentionLaws, UnscaledIsCaught) {
  attncheck::Options o = options();
  o.laws = {"query_sensitivity", "matches_oracle"};
  const attncheck::Report r = attncheck::check(ScaledDotProductAttention{/*scale_logits=*/false}, o);
  EXPECT_FALSE(r.passed());
  const attncheck::LawOutcome* l = r.law("query_sensitivity");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->status, attncheck::Status::fail) << r.text();
  EXPECT_NE(l->diagnosis.find("1/sqrt(d)"), std::string::npos) << l->diagnosis;
}

}  // namespace
