// The generators' own laws: every generated Problem is consistent and holds
// only values of its dtype, and every shrink candidate is consistent and
// strictly simpler, so shrinking ends.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "driver/problem_gen.h"

namespace attncheck {
namespace {

bool all_representable(const Problem& p) {
  for (const auto* t : {&p.q, &p.k, &p.v})
    for (double x : *t)
      if (!std::isnan(x) && round_to(p.dtype, x) != x) return false;
  return true;
}

GenOptions every_dtype() {
  GenOptions g;
  g.dtypes = {DType::f32, DType::f64, DType::f16, DType::bf16};
  return g;
}

RC_GTEST_PROP(Generators, ProblemsAreConsistent, ()) {
  const Problem p = *gen_problem(every_dtype());
  RC_ASSERT(p.inconsistency() == "");
  RC_ASSERT(all_representable(p));
}

RC_GTEST_PROP(Generators, ShrinksAreConsistentAndSmaller, ()) {
  GenOptions g = every_dtype();
  g.max_q_len = g.max_kv_len = g.max_head_dim = g.max_value_dim = 9;
  const Problem p = *gen_problem(g);
  for (const Problem& c : shrink_problem(p)) {
    RC_ASSERT(c.inconsistency() == "");
    RC_ASSERT(all_representable(c));
    const int64_t before = p.q.size() + p.k.size() + p.v.size();
    const int64_t after = c.q.size() + c.k.size() + c.v.size();
    RC_ASSERT(after <= before);
  }
}

TEST(Generators, LengthsReachPastTileSizes) {
  GenOptions g;
  int64_t longest = 0;
  bool lengths_differ = false, many_heads = false;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    const Problem p = sample_problem(g, seed);
    longest = std::max({longest, p.shape.q_len, p.shape.kv_len});
    lengths_differ |= p.shape.q_len != p.shape.kv_len;
    many_heads |= p.shape.batch > 1 && p.shape.heads > 1;
  }
  EXPECT_GE(longest, 65);
  EXPECT_TRUE(lengths_differ);
  EXPECT_TRUE(many_heads);
}

TEST(Generators, ValueComplexityOrdersSimpleFirst) {
  EXPECT_LT(value_complexity(0.0), value_complexity(-0.0));
  EXPECT_LT(value_complexity(1.0), value_complexity(1.5));
  EXPECT_LT(value_complexity(1.0), value_complexity(-1.0));
  EXPECT_LT(value_complexity(2.0), value_complexity(1024.0));
  EXPECT_LT(value_complexity(1e30), value_complexity(std::nan("")));
}

}  // namespace
}  // namespace attncheck
