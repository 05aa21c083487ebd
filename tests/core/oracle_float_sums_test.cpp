// The double path's bound sums formed in float (src/oracle/fast_bound_float.h)
// against the same sums in long double: never below them, and within a
// relative 1e-5 where nothing underflows. Where it bites: weights below
// float's normal range (p_j near 1e-40, some flushed to 0 in float), subnormal
// values, values near float's max, head and value dims that are not whole
// chunks or lanes. Then the oracle on such problems against its careful path.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "oracle/fast_bound_float.h"
#include "oracle/fast_kernels.h"
#include "oracle/oracle.h"
#include "oracle/oracle_paths.h"
#include "gen/generators.h"

namespace attncheck {
namespace {

using namespace oracle_detail;

// A float value of magnitude about `scale` (its sign random).
double float_near(std::mt19937_64& rng, double scale) {
  std::uniform_real_distribution<double> u(0.5, 1.5);
  const double x = static_cast<float>(u(rng) * scale);
  return rng() % 2 ? x : -x;
}

// upper >= exact always; upper <= exact (1 + 1e-5) + slack.
void expect_tight_upper(double upper, long double exact, double slack, const char* what) {
  EXPECT_GE(static_cast<long double>(upper), exact) << what;
  EXPECT_LE(static_cast<long double>(upper), exact * (1 + 1e-5L) + slack) << what;
}

TEST(FloatSums, LogitAbsSumsBoundTheExactSums) {
  std::mt19937_64 rng(11);
  // scale of q, of k: ordinary; products below float's normal range; sums near float's max.
  const double scales[][2] = {{1, 1}, {1e-25, 1e-20}, {1e18, 1e17}};
  for (int64_t D : {1, 16, 63, 64, 65, 130, 200})
    for (const auto& sc : scales) {
      const int64_t n16 = 2 * kTile, tiles = 2;
      std::vector<double> qb(kRows * D), kt(tiles * D * kTile), dot(kRows * n16), absd(kRows * n16);
      std::vector<float> aqb(kRows * D), akt(tiles * D * kTile);
      for (int64_t t = 0; t < kRows * D; ++t) {
        qb[t] = float_near(rng, sc[0]);
        aqb[t] = float_up(std::abs(qb[t]));
      }
      for (std::size_t t = 0; t < kt.size(); ++t) {
        kt[t] = float_near(rng, sc[1] / static_cast<double>(D));  // sum_d |q k| about sc[0] sc[1]
        akt[t] = float_up(std::abs(kt[t]));
      }
      logits_mixed_kernel(qb.data(), aqb.data(), kt.data(), akt.data(), D, n16, tiles, dot.data(), absd.data());
      {  // Keys held in float alone give the same results, to the bit.
        const std::vector<float> ktf(kt.begin(), kt.end());
        std::vector<double> dot_f(kRows * n16), absd_f(kRows * n16);
        logits_float_kernel(qb.data(), aqb.data(), ktf.data(), D, n16, tiles, dot_f.data(), absd_f.data());
        for (int64_t t = 0; t < kRows * n16; ++t) {
          ASSERT_EQ(dot_f[t], dot[t]) << "D " << D << " element " << t;
          ASSERT_EQ(absd_f[t], absd[t]) << "D " << D << " element " << t;
        }
      }
      const bool underflows = sc[0] * sc[1] / static_cast<double>(D) < 0x1p-100;
      for (int r = 0; r < kRows; ++r)
        for (int64_t j = 0; j < n16; ++j) {
          long double exact = 0;
          for (int64_t d = 0; d < D; ++d)
            exact += std::abs(static_cast<long double>(qb[r * D + d]) * kt[((j / kTile) * D + d) * kTile + j % kTile]);
          // The underflow allowance is added always; where products do underflow they may take as much again.
          const double slack = (underflows ? 2 : 1) * float_underflow(static_cast<double>(D), 0.0);
          expect_tight_upper(absd[r * n16 + j], exact, slack, "sum_d |q_d k_jd|");
          if (HasFailure()) return;
        }
    }
}

// One block of kRows rows over n keys: the per-key rows (w, pw, devw, d16)
// and one slab of kCols value columns.
struct Block {
  int64_t n;
  std::vector<double> w, pw, devw, d16, v;  // [kRows][n] each; v [n][kCols]
  std::vector<float> pwf, devwf, d16f, vf;
};

// weight: about how large each weight is; value: about how large |v| is.
Block draw_block(std::mt19937_64& rng, int64_t n, double weight, double value) {
  Block b{n, {}, {}, {}, {}, {}, {}, {}, {}, {}};
  std::uniform_real_distribution<double> u(0, 1);
  for (auto* a : {&b.w, &b.pw, &b.devw, &b.d16}) a->resize(kRows * n);
  for (int64_t t = 0; t < kRows * n; ++t) {
    // Every fourth weight 1e-6 of the others: with weight 1e-40 it rounds to 0 in float.
    const double p = weight * u(rng) * (t % 4 == 0 ? 1e-6 : 1.0);
    b.w[t] = p;
    const double sdt = p * 1e-3 * u(rng), sor = p * 1e-12 * u(rng);
    b.devw[t] = kBoundSafetyFactor * sdt + sor;  // as row_shifts_kernel forms it
    b.d16[t] = t % 3 == 0 ? 0x1p-25 * u(rng) : 0.0;
    b.pw[t] = p + sdt;
  }
  b.v.resize(n * kCols);
  // value < 0: near-equal values 1 + k 2^-20, k = 0..3 (|v_j - o| far below |o|).
  for (auto& x : b.v) x = value < 0 ? 1 + static_cast<double>(rng() % 4) * 0x1p-20 : float_near(rng, value);
  b.vf.assign(b.v.begin(), b.v.end());
  for (auto [x, y] : {std::pair{&b.pw, &b.pwf}, {&b.devw, &b.devwf}, {&b.d16, &b.d16f}}) {
    y->resize(x->size());
    to_float_kernel(x->data(), y->data(), static_cast<int64_t>(x->size()));
  }
  return b;
}

TEST(FloatSums, ValueAndDeviationSumsBoundTheExactSums) {
  std::mt19937_64 rng(12);
  // {weight, value}: ordinary; weights below float's normal range; subnormal values; values near float's max;
  // near-equal values, where rounding o to a float moves |v_j - o| by up to 3% (float_rounding's term).
  const double cases[][2] = {{1e-2, 1}, {1e-40, 1}, {1e-2, 1e-41}, {1e-3, 1e36}, {1e-2, -1}};
  for (int64_t n : {1, 63, 64, 65, 200, 1000})
    for (const auto& c : cases) {
      const Block b = draw_block(rng, n, c[0], c[1]);
      double out[kRows * kCols], sabs[kRows * kCols], dev[kRows * kCols], s16[kRows * kCols];
      values_float_kernel(b.vf.data(), kCols, 0, b.w.data(), b.pwf.data(), n, n, out, sabs);
      {  // The exact sum is values_kernel's, which reads V in double, to the bit.
        double out_d[kRows * kCols], sabs_d[kRows * kCols], vmax_d[kRows * kCols];
        std::vector<double> vis(kRows * n, 1.0);
        values_kernel(b.v.data(), kCols, 0, b.w.data(), b.pw.data(), vis.data(), n, n, out_d, sabs_d, vmax_d);
        for (int k = 0; k < kRows * kCols; ++k) ASSERT_EQ(out[k], out_d[k]) << "n " << n << " element " << k;
      }
      // The output as the oracle forms it (a double, in general not a float), perturbed off the float grid.
      for (int k = 0; k < kRows * kCols; ++k)
        out[k] = c[1] < 0 ? 1 + 1.5 * 0x1p-20 + 3e-9 * (k + 1) : out[k] / std::max(1e-300, static_cast<double>(n) * c[0]) * (1 + 1e-12);
      deviation_float_kernel(b.vf.data(), kCols, 0, out, b.devwf.data(), b.d16f.data(), n, n, dev, s16);
      const bool underflows = c[0] * c[1] < 0x1p-100;
      for (int r = 0; r < kRows; ++r) {
        const double devw_sum = double_sum_up(lane_sum(&b.devw[r * n], n), n),
                     d16_sum = double_sum_up(lane_sum(&b.d16[r * n], n), n);
        for (int l = 0; l < kCols; ++l) {
          const int k = r * kCols + l;
          const long double o = out[k];
          long double e_abs = 0, e_dev = 0, e_16 = 0, vmax = 0;
          for (int64_t j = 0; j < n; ++j) {
            const long double vj = b.v[j * kCols + l], spread = std::abs(vj - o);
            e_abs += b.pw[r * n + j] * std::abs(vj);
            e_dev += b.devw[r * n + j] * spread;
            e_16 += b.d16[r * n + j] * std::max(std::abs(vj), spread);
            vmax = std::max(vmax, std::abs(vj));
          }
          const double vm = static_cast<double>(vmax), scale = vm + std::abs(out[k]), round_o = float_rounding(out[k]);
          const double terms = static_cast<double>(n);
          // Underflow's allowance (float_underflow, added always; taken as much again where terms
          // do underflow) is all the slack past 1e-5 there is.
          const double slack_abs = (underflows ? 2 : 1) * float_underflow(terms, vm);
          const double slack_dev = (underflows ? 2 : 1) * float_underflow(terms, scale);
          expect_tight_upper(float_sum_up(sabs[k], n, terms, vm), e_abs, slack_abs, "sum_j pw_j |v_j|");
          // The deviation sums may also carry |o - fl(o)| times their weights' sum.
          expect_tight_upper(float_sum_up(dev[k], n, terms, scale, round_o * devw_sum), e_dev,
                             slack_dev + 2 * round_o * devw_sum, "sum_j devw_j |v_j - o|");
          expect_tight_upper(float_sum_up(s16[k], n, terms, scale, round_o * d16_sum), e_16,
                             slack_dev + 2 * round_o * d16_sum, "sum_j d16_j max(|v_j|, |v_j - o|)");
          if (HasFailure()) return;
        }
      }
    }
}

TEST(FloatSums, ColumnMaximaOverRangesAndMasks) {
  std::mt19937_64 rng(13);
  const int64_t n = 300;
  std::vector<float> vf(n * kCols), vis(n), cmax((n + kMaxChunk - 1) / kMaxChunk * kCols);
  for (auto& x : vf) x = static_cast<float>(float_near(rng, 1.0));
  for (auto& x : vis) x = rng() % 3 ? 1.0f : 0.0f;
  column_max_kernel(vf.data(), n, cmax.data());
  double got[kCols];
  for (int64_t begin : {0, 1, 63, 64, 100})
    for (int64_t end : {begin, begin + 1, int64_t{128}, int64_t{200}, n}) {
      if (end < begin) continue;
      range_max_kernel(vf.data(), cmax.data(), begin, end, got);
      for (int l = 0; l < kCols; ++l) {
        float want = 0;
        for (int64_t j = begin; j < end; ++j) want = std::max(want, std::abs(vf[j * kCols + l]));
        EXPECT_EQ(got[l], want) << "keys [" << begin << ", " << end << ") column " << l;
      }
    }
  masked_max_kernel(vf.data(), vis.data(), n, got);
  for (int l = 0; l < kCols; ++l) {
    float want = 0;
    for (int64_t j = 0; j < n; ++j)
      if (vis[j] > 0) want = std::max(want, std::abs(vf[j * kCols + l]));
    EXPECT_EQ(got[l], want) << "column " << l;
  }
}

// The oracle (the double path) against careful_row<double> on rows where the
// float sums bite; value_dim 20 leaves a slab of 4 live columns in 16.
// One head of 4 rows; key j's logit is q_0 k_j0 with q = (1, 0, ...).
Problem biting_problem(int which) {
  const int64_t n = which == 2 ? 3 : 100;
  Problem p = make_problem(DType::f32, Shape{1, 1, 4, n, 8, 20}, Causal::none, 1.0);
  std::mt19937_64 rng(20 + which);
  p.q.assign(p.shape.q_size(), 0.0);
  for (int64_t i = 0; i < 4; ++i) p.q[i * 8] = 1.0 + 0.25 * static_cast<double>(i);
  p.k.assign(p.shape.k_size(), 0.0);
  p.v.assign(p.shape.v_size(), 0.0);
  for (int64_t j = 0; j < n; ++j) {
    // which 0: half the keys 92 nats down (p_j near 1e-40), a few deeper (flushed in float);
    // which 1: the same with subnormal values; which 2: three keys with values up to float's max / 7.5
    // (column sums below half of it: inside the domain).
    p.k[j * 8] = which == 2 ? 0.1 * static_cast<double>(j) : j % 2 ? -92.0 - static_cast<double>(j % 7) : 0.0;
    for (int64_t c = 0; c < 20; ++c)
      p.v[j * 20 + c] = which == 0 ? float_near(rng, 1.0) : which == 1 ? float_near(rng, 1e-41) : float_near(rng, 3e37);
  }
  round_tensors(p);
  return p;
}

TEST(FloatSums, OracleBoundsStayAboveTheCarefulPath) {
  for (int which = 0; which < 3; ++which) {
    const Problem p = biting_problem(which);
    const OracleResult fast = oracle(p);
    OracleResult careful = sized_result(p.shape);
    for (int64_t i = 0; i < p.shape.q_len; ++i) careful_row<double>(p, 0, i, careful);
    ASSERT_EQ(fast.row_in_domain, careful.row_in_domain) << which;
    int judged = 0;
    for (std::size_t k = 0; k < fast.bound.size(); ++k) {
      if (std::isinf(careful.bound[k])) continue;
      ++judged;
      EXPECT_GE(fast.bound[k], careful.bound[k] * (1 - 1e-6)) << "problem " << which << " element " << k;
      EXPECT_LE(fast.bound[k], careful.bound[k] * 1.05) << "problem " << which << " element " << k;
      EXPECT_LE(std::abs(fast.exact[k] - careful.exact[k]), 1e-3 * careful.bound[k]) << which << " element " << k;
    }
    EXPECT_EQ(judged, 4 * 20) << which;
  }
}

}  // namespace
}  // namespace attncheck
