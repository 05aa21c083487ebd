// The oracle's blocked paths against its careful scalar path (careful_row) on
// the same rows: the double path (fast_head) against careful_row<double> on
// f32/f16/bf16 problems, the double-word path (fast_head_f64) against
// careful_row<long double> on f64 problems. The same exact values, far inside
// the bound, and bounds that are never smaller (beyond the oracle's own error
// terms, smaller in double-word than in long double) and larger only at second
// order (the polynomial upper bounds of the weights' shifts, fast_block.h).
// Also the vectorised exp against long double.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "oracle/oracle.h"
#include "oracle/fast_kernels.h"
#include "oracle/oracle_paths.h"
#include "oracle/vector_exp.h"
#include "gen/generators.h"

namespace attncheck {
namespace {

// careful_row<H> on every row: double for f32/f16/bf16, long double for f64 (what oracle() used before issue #12).
template <class H> OracleResult careful_everywhere(const Problem& p) {
  const Shape& sh = p.shape;
  OracleResult o = oracle_detail::sized_result(sh);
  for (int64_t bh = 0; bh < sh.batch * sh.heads; ++bh)
    for (int64_t i = 0; i < sh.q_len; ++i) oracle_detail::careful_row<H>(p, bh, i, o);
  return o;
}

struct Agreement {
  // max (|exact_fast - exact_careful| - ulp) / bound_careful: how far apart the
  // exact values are beyond their two roundings to double (half an ulp each).
  double worst_exact = 0;
  double lowest_ratio = INFINITY;  // min bound_fast / bound_careful
  double highest_ratio = 0;        // max bound_fast / bound_careful
  int64_t judged = 0;
};

void compare(const Problem& p, Agreement& a) {
  const OracleResult fast = oracle(p);
  const OracleResult careful =
      compute_dtype(p.dtype) == DType::f64 ? careful_everywhere<long double>(p) : careful_everywhere<double>(p);
  ASSERT_EQ(fast.row_in_domain, careful.row_in_domain) << p.header();
  for (std::size_t r = 0; r < fast.lse_exact.size(); ++r) {
    ASSERT_EQ(std::isinf(fast.lse_bound[r]), std::isinf(careful.lse_bound[r])) << p.header() << " row " << r;
    if (std::isinf(careful.lse_bound[r])) continue;
    EXPECT_LT(std::abs(fast.lse_exact[r] - careful.lse_exact[r]), 0.05 * careful.lse_bound[r]) << p.header() << " row " << r;
    EXPECT_GT(fast.lse_bound[r], 0.8 * careful.lse_bound[r]) << p.header() << " row " << r;
  }
  for (std::size_t k = 0; k < fast.exact.size(); ++k) {
    ASSERT_EQ(std::isinf(fast.bound[k]), std::isinf(careful.bound[k])) << p.header() << " element " << k;
    if (std::isinf(careful.bound[k]) || !(careful.bound[k] > 0)) continue;
    ++a.judged;
    const double ulp = std::nextafter(std::abs(careful.exact[k]), INFINITY) - std::abs(careful.exact[k]);
    const double apart = std::max(0.0, std::abs(fast.exact[k] - careful.exact[k]) - ulp);
    a.worst_exact = std::max(a.worst_exact, apart / careful.bound[k]);
    // Bounds near the underflow range are the paths' underflow floors (a
    // multiple of 2^-1074 times the magnitudes, docs/tolerance.md), which the
    // two take differently: their ratio says nothing of second order.
    if (careful.bound[k] < 1e-290) continue;
    const double r = fast.bound[k] / careful.bound[k];
    a.lowest_ratio = std::min(a.lowest_ratio, r);
    a.highest_ratio = std::max(a.highest_ratio, r);
  }
}

TEST(OraclePaths, FastAgreesWithCarefulOnRandomProblems) {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    Agreement a;
    GenOptions g;
    g.dtypes = {t};
    g.families = kAllFamilies;
    for (uint64_t seed = 1; seed <= 300; ++seed) {
      const Problem p = sample_problem(g, seed);
      compare(p, a);
      if (HasFatalFailure()) return;
    }
    SCOPED_TRACE(std::string(dtype_name(t)));
    EXPECT_GT(a.judged, 10000);
    // The exact values agree far inside the bound (both are double evaluations).
    EXPECT_LT(a.worst_exact, 1e-3);
    // Never tighter than the exact shifts (up to the sums' rounding), looser only at second order.
    EXPECT_GT(a.lowest_ratio, 1 - 1e-6);
    EXPECT_LT(a.highest_ratio, 1.05);
    std::printf("%s: %lld elements, bound fast / careful in [%.9f, %.6f], exact apart by %.3g bounds\n",
                std::string(dtype_name(t)).c_str(), static_cast<long long>(a.judged), a.lowest_ratio,
                a.highest_ratio, a.worst_exact);
  }
}

// The double path holds a head's K and V in float alone when they are all
// floats (fast_block.h HeadKeys); a law may hand it an f32 problem whose keys
// or values are not (a transformed copy): then K in double with |K| rounded up
// to floats, or V in double, and the same agreement with the careful path.
TEST(OraclePaths, FastAgreesWithCarefulWhereKeysOrValuesAreNotFloats) {
  Agreement a;
  GenOptions g;
  g.dtypes = {DType::f32};
  g.families = kAllFamilies;
  int64_t keys_off = 0, values_off = 0;
  for (uint64_t seed = 1; seed <= 120; ++seed) {
    Problem p = sample_problem(g, seed);
    // Off the float grid (2^-45), and far enough (2^-20) that reading them as floats would show:
    // every key on odd seeds, every value on seeds 1 mod 3.
    const double nudge = 1 + 0x1p-20 + 0x1p-45;
    if (seed % 2)
      for (double& x : p.k) x *= nudge, keys_off += x != static_cast<double>(static_cast<float>(x));
    if (seed % 3 == 1)
      for (double& x : p.v) x *= nudge, values_off += x != static_cast<double>(static_cast<float>(x));
    compare(p, a);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(keys_off, 1000);
  EXPECT_GT(values_off, 1000);
  EXPECT_GT(a.judged, 3000);
  EXPECT_LT(a.worst_exact, 1e-3);
  EXPECT_GT(a.lowest_ratio, 1 - 1e-6);
  EXPECT_LT(a.highest_ratio, 1.05);
}

// Rows of thousands of keys, causal rules cutting tiles, value_dim not a
// multiple of the lanes: one head, q_len 5 to max_q.
GenOptions long_rows(DType t, int64_t max_q) {
  GenOptions g;
  g.dtypes = {t};
  g.families = kGaussian | kModelLogits | kNearEqual;
  g.max_batch = g.max_heads = 1;
  g.min_q_len = 5, g.max_q_len = max_q;
  g.min_kv_len = 1000, g.max_kv_len = 3000;
  g.min_head_dim = 60, g.max_head_dim = 70;
  g.max_value_dim = 70;
  return g;
}

// ABI v2 problems on the blocked paths: the features that change which keys a
// row sees (GQA, lengths with NaN or huge padding, windows) and those that change the
// logits (soft-cap, bias, ALiBi: the chain in double, or long double for f64)
// or add a term (sinks): the same agreement with the careful path as v1 problems.
void fast_agrees_on_v2(FeatureBits drawn, FeatureBits forced_odd, FeatureBits forced_even, const char* what) {
  for (DType t : {DType::f32, DType::f16, DType::f64}) {
    Agreement a;
    GenOptions g;
    g.dtypes = {t};
    g.max_heads = 6;
    g.families = kAllFamilies;
    g.features = kV1Features | drawn;
    for (uint64_t seed = 1; seed <= 200; ++seed) {
      g.required = seed % 2 ? forced_odd : forced_even;
      compare(sample_problem(g, seed), a);
      if (::testing::Test::HasFatalFailure()) return;
    }
    SCOPED_TRACE(std::string(dtype_name(t)));
    EXPECT_GT(a.judged, 5000);
    EXPECT_LT(a.worst_exact, 1e-3);
    EXPECT_GT(a.lowest_ratio, t == DType::f64 ? 0.85 : 1 - 1e-6);
    EXPECT_LT(a.highest_ratio, t == DType::f64 ? 1.25 : 1.05);
    std::printf("%s with %s: %lld elements, bound fast / careful in [%.9f, %.6f], exact apart by %.3g bounds\n",
                std::string(dtype_name(t)).c_str(), what, static_cast<long long>(a.judged), a.lowest_ratio,
                a.highest_ratio, a.worst_exact);
  }
}

TEST(OraclePaths, FastAgreesWithCarefulOnVisibilityFeatures) {
  fast_agrees_on_v2(ATTNCHECK_FEATURE_GQA | ATTNCHECK_FEATURE_LENGTHS | ATTNCHECK_FEATURE_WINDOW,
                    ATTNCHECK_FEATURE_LENGTHS, ATTNCHECK_FEATURE_WINDOW, "gqa/lengths/window");
}

TEST(OraclePaths, FastAgreesWithCarefulOnLogitTransformsAndSinks) {
  const FeatureBits all = ATTNCHECK_FEATURE_GQA | ATTNCHECK_FEATURE_LENGTHS | ATTNCHECK_FEATURE_WINDOW |
                          ATTNCHECK_FEATURE_SOFTCAP | ATTNCHECK_FEATURE_BIAS | ATTNCHECK_FEATURE_ALIBI |
                          ATTNCHECK_FEATURE_SINKS;
  fast_agrees_on_v2(all, ATTNCHECK_FEATURE_SOFTCAP | ATTNCHECK_FEATURE_SINKS,
                    ATTNCHECK_FEATURE_BIAS | ATTNCHECK_FEATURE_ALIBI, "softcap/bias/alibi/sinks");
}

TEST(OraclePaths, LongRowsAndCausalBlocks) {
  const GenOptions g = long_rows(DType::f32, 70);
  Agreement a;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    compare(sample_problem(g, seed), a);
    if (HasFatalFailure()) return;
  }
  EXPECT_LT(a.worst_exact, 1e-3);
  EXPECT_GT(a.lowest_ratio, 1 - 1e-6);
  EXPECT_LT(a.highest_ratio, 1.05);
}

// f64: the double-word path against careful_row<long double>. The exact
// values, beyond the rounding of each to double (Agreement::worst_exact):
// long double's own error (~2^-64 per operation, far above double-word's
// ~2^-106; below 5e-5 of the bound on these draws). The bounds: the oracle's own
// terms differ, and careful_row evaluates the shifts' E = log sum_k p_k exp(e_k)
// in log space in double, whose rounding (a few u) is comparable to f64's
// logit errors e_j (~10u on short rows): its f64 shifts are off by up to ~30%
// either way on short rows (the polynomial bounds of the blocked path are not),
// while on long rows, where the accumulation terms dominate, both agree closely.
void expect_f64_agreement(const Agreement& a, const char* what, double lowest, double highest) {
  SCOPED_TRACE(what);
  EXPECT_LT(a.worst_exact, 1e-3);
  EXPECT_GT(a.lowest_ratio, lowest);
  EXPECT_LT(a.highest_ratio, highest);
  std::printf("f64 %s: %lld elements, bound double-word / long double in [%.6f, %.6f], exact apart by %.3g bounds\n",
              what, static_cast<long long>(a.judged), a.lowest_ratio, a.highest_ratio, a.worst_exact);
}

TEST(OraclePaths, F64DoubleWordAgreesWithLongDouble) {
  GenOptions g;
  g.dtypes = {DType::f64};
  g.families = kAllFamilies;
  Agreement a;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    compare(sample_problem(g, seed), a);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(a.judged, 10000);
  expect_f64_agreement(a, "random", 0.8, 1.3);
}

TEST(OraclePaths, F64LongRowsAndCausalBlocks) {
  const GenOptions g = long_rows(DType::f64, 40);
  Agreement a;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    compare(sample_problem(g, seed), a);
    if (HasFatalFailure()) return;
  }
  expect_f64_agreement(a, "long rows", 0.99, 1.01);
}

TEST(VectorExp, WithinItsStatedUlps) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> wide(-745, 0), near0(-1, 0), mid(-40, 5);
  std::vector<double> x(1 << 20), y(x.size());
  double worst = 0;
  for (int round = 0; round < 3; ++round) {
    for (std::size_t t = 0; t < x.size(); ++t) x[t] = round == 0 ? wide(rng) : round == 1 ? near0(rng) : mid(rng);
    x[0] = 0, x[1] = -708, x[2] = -707.9, x[3] = -1e-300, x[4] = -0.34657359027997264, x[5] = -INFINITY;
    oracle_detail::exp_array(x.data(), y.data(), static_cast<int64_t>(x.size()));
    for (std::size_t t = 0; t < x.size(); ++t) {
      const long double want = std::exp(static_cast<long double>(x[t]));
      if (want == 0) {
        EXPECT_EQ(y[t], 0.0);
        continue;
      }
      if (want < 0x1p-1022L) continue;  // subnormal results come from std::exp
      const double ulp = std::nextafter(static_cast<double>(want), INFINITY) - static_cast<double>(want);
      worst = std::max(worst, static_cast<double>(std::abs(y[t] - want) / ulp));
    }
  }
  std::printf("vector exp: largest error %.3f ulp (the bound counts %.0f u = %.0f half-ulps)\n", worst,
              oracle_detail::kVectorExpUlps, oracle_detail::kVectorExpUlps);
  EXPECT_LE(worst, oracle_detail::kVectorExpUlps / 2);
  double nan = NAN;
  double out = 0;
  oracle_detail::exp_array(&nan, &out, 1);
  EXPECT_TRUE(std::isnan(out));
}

// exp_weights is the three passes it replaced, value for value: offsets
// (x_j = s_j - m where seen, 0 elsewhere), exp_array over them, then
// masked_sum_kernel's product with vis and its lane-ordered sum; with
// arguments below exp_array's -708 (std::exp's), -inf and NaN logits.
TEST(VectorExp, WeightsAreOffsetsExpThenMaskedSum) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> logit(-760, 40);
  for (int64_t n : {8, 64, 4096}) {
    for (int round = 0; round < 4; ++round) {
      std::vector<double> s(n), vis(n);
      double m = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        s[j] = round == 0 ? logit(rng) / 100 : logit(rng);  // round 0: no argument below -708
        vis[j] = rng() % 4 != 0 ? 1.0 : 0.0;
        if (vis[j] > 0) m = std::max(m, s[j]);
      }
      if (round == 3) s[1] = -INFINITY, s[2] = NAN, vis[1] = vis[2] = 1;  // a masked-by-bias key, a NaN logit
      std::vector<double> x_want(n), w_want(n), x(n), w(n);
      for (int64_t j = 0; j < n; ++j) x_want[j] = vis[j] > 0 ? s[j] - m : 0.0;
      oracle_detail::exp_array(x_want.data(), w_want.data(), n);
      const double total_want = oracle_detail::masked_sum_kernel(w_want.data(), vis.data(), n);
      const double total = oracle_detail::exp_weights(s.data(), vis.data(), m, x.data(), w.data(), n);
      SCOPED_TRACE(testing::Message() << "n " << n << ", round " << round);
      EXPECT_EQ(std::memcmp(x.data(), x_want.data(), n * sizeof(double)), 0);
      EXPECT_EQ(std::memcmp(w.data(), w_want.data(), n * sizeof(double)), 0);
      EXPECT_EQ(std::memcmp(&total, &total_want, sizeof total), 0) << total << " against " << total_want;
    }
  }
}

}  // namespace
}  // namespace attncheck
