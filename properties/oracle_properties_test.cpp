// The oracle's own laws: exact special cases, the bound holding for the
// built-in references, and the bound being tight enough to catch an output
// off by a relative 1e-6 in f64.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>

#include "impls/in_process.h"
#include "oracle/oracle.h"
#include "driver/problem_gen.h"

namespace attncheck {
namespace {

TEST(Oracle, TwoKeysKnownValue) {
  // q = [1], k = [[0], [1]], v = [[0], [1]], scale 1: out = e / (1 + e).
  Problem p = make_problem(DType::f64, Shape{1, 1, 1, 2, 1, 1}, Causal::none, 1.0);
  p.q = {1};
  p.k = {0, 1};
  p.v = {0, 1};
  const OracleResult o = oracle(p);
  EXPECT_NEAR(o.exact[0], std::exp(1.0) / (1 + std::exp(1.0)), 1e-16);
  EXPECT_GT(o.bound[0], 0);
  EXPECT_LT(o.bound[0], 1e-14);
}

TEST(Oracle, RowSeeingNothingIsExactlyZero) {
  Problem p = make_problem(DType::f32, Shape{1, 1, 2, 3, 2, 2}, Causal::top_left);
  p.mask = {0, 1, 1, 1, 1, 1};  // row 0 sees only key 0 by the causal rule, which the mask hides
  for (double& x : p.v) x = 1;
  const OracleResult o = oracle(p);
  EXPECT_EQ(o.exact[0], 0);
  EXPECT_TRUE(std::isinf(o.bound[0]));  // judged by fully_masked_rows_zero, not by the bound
  EXPECT_FALSE(o.row_in_domain[0]);
  EXPECT_TRUE(std::isnan(o.entropy[0]));
  EXPECT_EQ(o.exact[2], 1);
}

RC_GTEST_PROP(Oracle, SingleVisibleKeyPassesItsValueThrough, ()) {
  GenOptions g;
  g.mask = false;
  g.causal = false;
  g.families = kGaussian | kSmallInts;
  Problem p = *gen_problem(g);
  p.mask.assign(p.shape.mask_size(), 0);
  for (int64_t bh = 0; bh < p.shape.batch * p.shape.heads; ++bh)
    for (int64_t i = 0; i < p.shape.q_len; ++i) p.mask[p.mask_at(bh, i, i % p.shape.kv_len)] = 1;
  const OracleResult o = oracle(p);
  for (int64_t bh = 0; bh < p.shape.batch * p.shape.heads; ++bh)
    for (int64_t i = 0; i < p.shape.q_len; ++i)
      for (int64_t c = 0; c < p.shape.value_dim; ++c)
        RC_ASSERT(o.exact[p.out_at(bh, i, c)] == p.v[p.v_at(bh, i % p.shape.kv_len, c)]);
}

// Requirement (b) of the bound: a relative error of 1e-6 in f64 is flagged.
RC_GTEST_PROP(Oracle, RelativeErrorOf1e6IsFlaggedInF64, ()) {
  GenOptions g;
  g.dtypes = {DType::f64};
  g.families = kGaussian;
  const Problem p = *gen_problem(g);
  const OracleResult o = oracle(p);
  std::vector<double> off = o.exact;
  bool any = false;
  for (double& x : off)
    if (x != 0) { x *= 1 + 1e-6; any = true; }
  RC_PRE(any);
  RC_ASSERT(!compare_to_oracle(p, o, off).ok);
}

// Huge logits do not blunt the bound where nothing is ill-conditioned: one
// visible key at a logit of ~1e299 passes its value through, and 1e-6 off is
// flagged (the log-sum-exp allowance is capped; the oracle's own error has none).
TEST(Oracle, StaysSharpAtHugeLogits) {
  for (DType t : {DType::f32, DType::f64}) {
    Problem p = make_problem(t, Shape{1, 1, 1, 2, 1, 1}, Causal::none, 1.0);
    const double big = t == DType::f64 ? 1e150 : 1e18;
    p.q = {round_to(t, big)};
    p.k = {round_to(t, big), round_to(t, -big)};
    p.v = {3, -5};
    const OracleResult o = oracle(p);
    ASSERT_TRUE(std::isfinite(o.bound[0])) << dtype_name(t);
    EXPECT_EQ(o.exact[0], 3);
    EXPECT_FALSE(compare_to_oracle(p, o, {3 * (1 + 1e-3)}).ok) << dtype_name(t);
    if (t == DType::f64) {
      EXPECT_FALSE(compare_to_oracle(p, o, {3 * (1 + 1e-6)}).ok) << "bound " << o.bound[0];
    }
  }
}

// The built-in references stay inside the bound: requirement (a) at CI size
// (the long validation is tools/validate_bound).
RC_GTEST_PROP(Oracle, ReferencesStayInsideTheBound, ()) {
  GenOptions g;
  g.dtypes = {DType::f32, DType::f64, DType::f16, DType::bf16};
  const Problem p = *gen_problem(g);
  const OracleResult o = oracle(p);
  for (const char* name : {"reference", "naive", "online"}) {
    auto impl = make_builtin(name);
    const Outcome out = impl->run(p);
    RC_ASSERT(out.status == CallStatus::ok);
    const Comparison c = compare_to_oracle(p, o, out.out);
    RC_ASSERT(c.ok);
  }
}

}  // namespace
}  // namespace attncheck
