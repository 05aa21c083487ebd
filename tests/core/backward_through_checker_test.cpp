// The built-ins' backward as the checker calls it (make_builtin: the call
// layout's poison in live gradient elements, guards around them, NaN in
// padding and gaps of the inputs, the check that out and lse are left alone):
// every reference answers ok on a problem that uses every v2 feature and
// strided gradient views, in every dtype, and the three agree; the zoo's
// backward members answer ok too (their faults are in the numbers).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "impls/in_process.h"
#include "problem/problem.h"

namespace attncheck {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// batch 2, heads 4 over 2 kv heads, q_len 19, kv_len 40 (two of online's
// query blocks and key tiles), head_dim 5, value_dim 3; every v2 feature;
// values multiples of 1/16 in [-1, 1) (exact in every dtype), NaN at padding.
Problem every_feature(DType dtype, bool lse) {
  Shape s{2, 4, 19, 40, 5, 3};
  s.kv_heads = 2;
  Problem p = make_problem(dtype, s, Causal::bottom_right);
  uint32_t state = 2026;
  const auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return static_cast<double>(static_cast<int>((state >> 16) % 32) - 16) / 16.0;
  };
  p.q_lens = {19, 11};
  p.kv_lens = {33, 40};
  p.dout.resize(static_cast<std::size_t>(s.out_size()));
  for (std::vector<double>* t : {&p.q, &p.k, &p.v, &p.dout})
    for (double& x : *t) x = next();
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = p.q_len_of(b); i < s.q_len; ++i) {
        for (int64_t d = 0; d < s.head_dim; ++d) p.q[p.q_at(b * s.heads + h, i, d)] = kNaN;
        for (int64_t c = 0; c < s.value_dim; ++c) p.dout[p.out_at(b * s.heads + h, i, c)] = kNaN;
      }
    for (int64_t g = 0; g < s.kv_heads; ++g)
      for (int64_t j = p.kv_len_of(b); j < s.kv_len; ++j) {
        for (int64_t d = 0; d < s.head_dim; ++d) p.k[p.k_at(b * s.kv_heads + g, j, d)] = kNaN;
        for (int64_t c = 0; c < s.value_dim; ++c) p.v[p.v_at(b * s.kv_heads + g, j, c)] = kNaN;
      }
  }
  p.window_left = 20, p.window_right = 3;
  p.softcap = 1.5, p.scale = 0.75;
  p.bias_broadcast = {true, false, true};
  p.bias.resize(static_cast<std::size_t>(p.bias_broadcast.size(s)));
  for (std::size_t n = 0; n < p.bias.size(); ++n)
    p.bias[n] = n % 11 == 0 ? -std::numeric_limits<double>::infinity() : static_cast<double>(int(n % 7) - 3) / 4;
  p.mask.resize(static_cast<std::size_t>(s.mask_size()));
  for (std::size_t n = 0; n < p.mask.size(); ++n) p.mask[n] = n % 5 != 0;
  p.alibi_slopes = {0.125, 0.0625, 0.25, 0.5};
  p.sinks = {0.5, -1.0, 1.0, 0.0};
  p.lse_requested = lse;
  p.layouts.q = {{0, 2, 1}, {0, 1, 2}};
  p.layouts.v = {{0, 2, 1}, {1, 0, 0}};
  p.layouts.dout = {{0, 2, 1}, {0, 1, 1}};
  p.layouts.dq = {{2, 0, 1}, {0, 2, 0}};
  p.layouts.dk = {{0, 1, 2}, {3, 0, 1}};
  p.layouts.dv = {{0, 2, 1}, {0, 1, 0}};
  return p;
}

double tolerance(DType t) {
  switch (t) {
    case DType::f64: return 1e-12;
    case DType::f32: return 2e-5;
    case DType::f16: return 4e-3;
    case DType::bf16: return 3e-2;
  }
  return 0;
}

// Largest |a - b| / (1 + |b|); NaN on one side only (a padding mix-up): infinity.
double gap(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double g = 0;
  for (std::size_t n = 0; n < a.size(); ++n) {
    if (std::isnan(a[n]) != std::isnan(b[n])) return INFINITY;
    if (!std::isnan(a[n])) g = std::max(g, std::abs(a[n] - b[n]) / (1 + std::abs(b[n])));
  }
  return g;
}

TEST(BackwardThroughChecker, ReferencesAgreeOnEveryFeatureInEveryDtype) {
  for (const DType dtype : every_dtype())
    for (const bool lse : {false, true}) {
      const Problem p = every_feature(dtype, lse);
      ASSERT_EQ(p.inconsistency(), "");
      ASSERT_TRUE(p.is_backward());
      std::vector<Outcome> outcomes;
      for (const char* name : {"reference", "naive", "online"}) {
        const Outcome o = make_builtin(name)->run(p);
        ASSERT_EQ(o.status, CallStatus::ok) << name << " " << dtype_name(dtype) << ": " << o.message;
        outcomes.push_back(o);
      }
      // Gradients worth comparing: far from all zero.
      for (const std::vector<double>* g : {&outcomes[0].dq, &outcomes[0].dk, &outcomes[0].dv}) {
        double largest = 0;
        for (double x : *g)
          if (!std::isnan(x)) largest = std::max(largest, std::abs(x));
        EXPECT_GT(largest, 0.05) << dtype_name(dtype);
      }
      for (std::size_t a = 1; a < outcomes.size(); ++a) {
        const std::string what = std::string(a == 1 ? "naive" : "online") + " " + std::string(dtype_name(dtype)) +
                                 (lse ? " with lse" : " without lse");
        EXPECT_LT(gap(outcomes[a].dq, outcomes[0].dq), tolerance(dtype)) << what;
        EXPECT_LT(gap(outcomes[a].dk, outcomes[0].dk), tolerance(dtype)) << what;
        EXPECT_LT(gap(outcomes[a].dv, outcomes[0].dv), tolerance(dtype)) << what;
      }
    }
}

TEST(BackwardThroughChecker, ZooMembersAnswerOk) {
  for (const char* name : {"grad_no_rowsum", "grad_dq_unscaled", "grad_gqa_first_head", "grad_dv_unnormalised",
                           "grad_nan_empty_rows", "grad_softcap_derivative_dropped"}) {
    const Outcome o = make_builtin(name)->run(every_feature(DType::f32, true));
    EXPECT_EQ(o.status, CallStatus::ok) << name << ": " << o.message;
  }
}

}  // namespace
}  // namespace attncheck
