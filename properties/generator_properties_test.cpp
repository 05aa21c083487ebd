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

GenOptions options_over_every_dtype() {
  GenOptions g;
  g.dtypes = every_dtype();
  return g;
}

RC_GTEST_PROP(Generators, ProblemsAreConsistent, ()) {
  const Problem p = *gen_problem(options_over_every_dtype());
  RC_ASSERT(p.inconsistency() == "");
  RC_ASSERT(all_representable(p));
}

// How complex a problem is, component by component: its extents, its
// features (mask, causal rule, explicit scale), the summed complexity of its
// values, and the keys its mask hides. A shrink candidate must be no larger
// in any component and smaller in at least one, so shrinking always ends.
struct Complexity {
  int64_t extents = 0, features = 0, values = 0, hidden = 0;
};

Complexity complexity(const Problem& p) {
  Complexity c;
  const Shape& s = p.shape;
  c.extents = s.batch + s.heads + s.q_len + s.kv_len + s.head_dim + s.value_dim;
  c.features = (p.has_mask() ? 1 : 0) + static_cast<int>(p.causal) + (std::isnan(p.scale) ? 0 : 1);
  for (const auto* t : {&p.q, &p.k, &p.v})
    for (double x : *t) c.values += value_complexity(x);
  for (uint8_t m : p.mask) c.hidden += m == 0;
  return c;
}

bool strictly_simpler(const Problem& a, const Problem& b) {
  const Complexity x = complexity(a), y = complexity(b);
  const bool no_larger = x.extents <= y.extents && x.features <= y.features && x.values <= y.values &&
                         x.hidden <= y.hidden;
  const bool smaller = x.extents < y.extents || x.features < y.features || x.values < y.values || x.hidden < y.hidden;
  return no_larger && smaller;
}

RC_GTEST_PROP(Generators, ShrinksAreConsistentAndStrictlySimpler, ()) {
  GenOptions g = options_over_every_dtype();
  g.max_q_len = g.max_kv_len = g.max_head_dim = g.max_value_dim = 9;
  const Problem p = *gen_problem(g);
  for (const Problem& c : shrink_problem(p)) {
    RC_ASSERT(c.inconsistency() == "");
    RC_ASSERT(all_representable(c));
    RC_ASSERT(strictly_simpler(c, p));
  }
}

// The check above can fail: a shrinker that offers its input unchanged, or
// one that grows the problem, is refused.
TEST(Generators, StrictSimplicityRefusesUnchangedAndLarger) {
  GenOptions g = options_over_every_dtype();
  const Problem p = sample_problem(g, 7, 50);
  EXPECT_FALSE(strictly_simpler(p, p));
  Problem larger = p;
  larger.scale = 0.5;
  if (std::isnan(p.scale)) {
    EXPECT_FALSE(strictly_simpler(larger, p));
  }
  const std::vector<Problem> candidates = shrink_problem(p, g);
  ASSERT_FALSE(candidates.empty());
  EXPECT_FALSE(strictly_simpler(p, candidates.front()));  // the inverse step is not a shrink
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
