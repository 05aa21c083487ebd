// The f64 path's split kernels (dw_logits_split_kernel, dw_values_split_kernel
// in src/oracle/fast_kernels_f64.h) against its Dot2 kernels: they agree
// within the sum of both kernels' stated bounds, on rows whose magnitudes
// spread over many binades (the split error is relative to sigma, not to each
// sum) and on sums that cancel (where a kernel in plain double would be off by
// u times the terms, far beyond both bounds).
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "oracle/double_double.h"
#include "oracle/fast_kernels.h"
#include "oracle/fast_kernels_f64.h"

namespace attncheck {
namespace {

using namespace oracle_detail;

// A double of magnitude about `scale` times 2^[-spread, spread], random sign and bits.
double spread_value(std::mt19937_64& rng, double scale, int spread) {
  std::uniform_real_distribution<double> u(0.5, 1.0);
  std::uniform_int_distribution<int> e(-spread, spread);
  const double x = std::ldexp(u(rng) * scale, e(rng));
  return rng() % 2 ? x : -x;
}

TEST(SplitKernels, LogitsAgreeWithDot2WithinBothBounds) {
  std::mt19937_64 rng(5);
  int64_t checked = 0;
  for (int64_t D : {1, 7, 16, 64, 128, 200})
    for (int spread : {0, 10, 40})
      for (bool cancel : {false, true}) {
        const int64_t tiles = 2, n16 = tiles * kTile;
        std::vector<double> qb(kRows * D), aqb(kRows * D), kt(tiles * D * kTile);
        for (int64_t t = 0; t < kRows * D; ++t) aqb[t] = std::abs(qb[t] = spread_value(rng, 1.0, spread));
        for (auto& x : kt) x = spread_value(rng, 3.0, spread);
        if (cancel)  // key 0 of tile 0: q_0 . k_0 = 0 up to a last term, each term large
          for (int64_t d = 0; d + 1 < D; d += 2) {
            kt[d * kTile] = qb[d + 1];
            kt[(d + 1) * kTile] = -qb[d] * (1 + 0x1p-30);
          }
        // sigma per row from its largest |q| and the largest key sum (as the path forms them).
        double k1max = 0;
        for (int64_t j = 0; j < n16; ++j) {
          double sum = 0;
          for (int64_t d = 0; d < D; ++d) sum += std::abs(kt[((j / kTile) * D + d) * kTile + j % kTile]);
          k1max = std::max(k1max, sum);
        }
        double sigma[kRows];
        for (int64_t r = 0; r < kRows; ++r) {
          const double qmax = *std::max_element(&aqb[r * D], &aqb[r * D] + D);
          sigma[r] = dw_split_sigma(qmax, k1max, D);
          ASSERT_GT(sigma[r], 0.0);
        }
        std::vector<double> hi(kRows * n16), lo(kRows * n16), a(kRows * n16);
        std::vector<double> hi2(kRows * n16), lo2(kRows * n16), a2(kRows * n16);
        dw_logits_split_kernel(qb.data(), aqb.data(), sigma, kt.data(), D, n16, tiles, hi.data(), lo.data(), a.data());
        dw_logits_kernel(qb.data(), aqb.data(), kt.data(), D, n16, tiles, hi2.data(), lo2.data(), a2.data());
        for (int64_t r = 0; r < kRows; ++r)
          for (int64_t j = 0; j < n16; ++j) {
            const int64_t at = r * n16 + j;
            EXPECT_EQ(a[at], a2[at]);  // the same |q||k| sums, to the bit
            const dd::DW diff = dd::sub(dd::DW{hi[at], lo[at]}, dd::DW{hi2[at], lo2[at]});
            // Dot2's gamma(D)^2 a_j, the split's error per sigma, the subtraction's u^2.
            const double g = gamma(static_cast<double>(D), dd::kU);
            const double allowed = g * g * a2[at] * 1.01 + dw_split_logit_error(D) * sigma[r] +
                                   4 * dd::kU2 * std::abs(hi2[at]);
            EXPECT_LE(std::abs(diff.hi), allowed) << "D " << D << " spread " << spread << " row " << r << " key " << j;
            ++checked;
          }
      }
  EXPECT_GT(checked, 1000);
}

TEST(SplitKernels, ValuesAgreeWithDot2WithinBothBounds) {
  std::mt19937_64 rng(9);
  int64_t checked = 0;
  for (int64_t n : {1, 8, 100, 1000})
    for (int spread : {0, 20})
      for (bool cancel : {false, true}) {
        const int64_t stride = ((n + kTile - 1) / kTile) * kTile;
        std::vector<double> w_hi(kRows * stride, 0.0), w_lo(kRows * stride, 0.0), v(n * kCols);
        std::uniform_real_distribution<double> unit(0.0, 1.0);
        dd::DW total[kRows];
        for (int64_t r = 0; r < kRows; ++r) {
          double p = 0, s = 0;
          for (int64_t j = 0; j < n; ++j) {
            const double w = j == r % n ? 1.0 : std::ldexp(unit(rng), -static_cast<int>(rng() % (spread + 1)));
            w_hi[r * stride + j] = w;
            w_lo[r * stride + j] = w * dd::kU * (unit(rng) - 0.5);  // a normalized DW's lo
            const dd::DW t = dd::two_sum(p, w);
            p = t.hi;
            s += t.lo + w_lo[r * stride + j];
          }
          total[r] = dd::two_sum(p, s);
        }
        for (auto& x : v) x = spread_value(rng, 2.0, spread);
        if (cancel && n >= 2)  // column 0: the first two keys' terms cancel to a part in 2^30 for row 0
          v[kCols] = -v[0] * w_hi[0] / w_hi[1] * (1 + 0x1p-30);
        double vmax = 0;
        for (double x : v) vmax = std::max(vmax, std::abs(x));
        double sigma[kRows];
        for (int64_t r = 0; r < kRows; ++r) {
          sigma[r] = dw_split_sigma(total[r].hi * (1 + 0x1p-40), vmax, 0);
          ASSERT_GT(sigma[r], 0.0);
        }
        double out[kRows * kCols], out2[kRows * kCols];
        dw_values_split_kernel(v.data(), kCols, 0, w_hi.data(), w_lo.data(), stride, n, total, sigma, out);
        dw_values_kernel(v.data(), kCols, 0, w_hi.data(), w_lo.data(), stride, n, total, out2);
        for (int64_t r = 0; r < kRows; ++r)
          for (int64_t c = 0; c < kCols; ++c) {
            double sabs = 0;
            for (int64_t j = 0; j < n; ++j) sabs += w_hi[r * stride + j] * std::abs(v[j * kCols + c]);
            sabs /= total[r].hi;
            const double o = out2[r * kCols + c];
            // Both rounded to double (an ulp each), Dot2's coefficient, the split's error over the total.
            const double allowed = 2 * dd::kU * std::abs(o) +
                                   1.01 * (dw_accumulation_coefficient(static_cast<double>(n)) * sabs +
                                           dw_split_value_error(static_cast<double>(n)) * sigma[r] / total[r].hi);
            EXPECT_LE(std::abs(out[r * kCols + c] - o), allowed) << "n " << n << " spread " << spread << " row " << r;
            ++checked;
          }
      }
  EXPECT_GT(checked, 500);
}

// sigma: a power of two at least twice the product, and 0 out of the kernels' range.
TEST(SplitKernels, SigmaIsAPowerOfTwoInRange) {
  for (double x : {1e-3, 0.75, 1.0, 3.0, 1e100}) {
    const double s = dw_split_sigma(x, 1.0, 8);
    int e = 0;
    EXPECT_EQ(std::frexp(s, &e), 0.5) << x;
    EXPECT_GE(s, 2 * x) << x;
    EXPECT_LE(s, 8 * x) << x;
  }
  EXPECT_EQ(dw_split_sigma(1e200, 1e200, 8), 0.0);
  EXPECT_EQ(dw_split_sigma(1e-150, 1e-150, 8), 0.0);  // 2e-300: the rests would underflow
  EXPECT_EQ(dw_split_sigma(1e-200, 1e-200, 8), 0x1p-960);  // the product is below double's range: any sigma holds it
  EXPECT_EQ(dw_split_sigma(HUGE_VAL, 1.0, 8), 0.0);
  EXPECT_EQ(dw_split_sigma(std::nan(""), 1.0, 8), 0.0);
  EXPECT_EQ(dw_split_sigma(0.0, 1.0, 8), 0x1p-960);
}

}  // namespace
}  // namespace attncheck
