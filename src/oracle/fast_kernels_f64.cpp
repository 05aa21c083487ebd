#include "oracle/fast_kernels_f64.h"

#include <cmath>

#include "oracle/simd_clones.h"
#include "oracle/simd_v8d.h"


// This file is compiled with -ffp-contract=off (src/CMakeLists.txt): the
// error-free transformations below are written with plain * + -, which the
// FMA-enabled clones must not fuse (double_double.h, "Floating-point contraction").

namespace attncheck::oracle_detail {

namespace {

// One Dot2 step of dd::dot2 (double_double_dot.h) in 8 lanes at once:
// (h, r) = TwoProduct(x, y) (dd::two_prod), (p, e) = TwoSum(p, h) (dd::two_sum),
// s += e + r. After the steps of a chain, p + s is its dot product within
// gamma(steps)^2 sum |x y| [ORO05].
__attribute__((always_inline)) inline void dot2_step8(v8d x, v8d y, v8d& p, v8d& s) {
  const v8d h = x * y;
  const v8d r = fma8(x, y, -h);
  const v8d t = p + h;
  const v8d bb = t - p;
  const v8d e = (p - (t - bb)) + (h - bb);
  p = t;
  s = s + (e + r);
}

// TwoSum(p, s) in 8 lanes (dd::two_sum): the chain's p + s as a normalized DW.
__attribute__((always_inline)) inline void normalize8(v8d p, v8d s, v8d& hi, v8d& lo) {
  hi = p + s;
  const v8d bb = hi - p;
  lo = (p - (hi - bb)) + (s - bb);
}

}  // namespace

namespace {

// The logit kernels' body, inlined into each clone of each: Dot2 per term, or
// (kSplit) the split against sigma[r] (dw_logits_split_kernel).
template <bool kSplit>
__attribute__((always_inline)) inline void dw_logit_tiles(const double* qb, const double* aqb, const double* sigma,
                                                          const double* kt, int64_t D, int64_t n16, int64_t tiles,
                                                          double* s_hi, double* s_lo, double* absd) {
  static_assert(kTile == 16 && kRows == 4, "the kernel holds 4 rows x 2 vectors of 8 keys: p, s and |q||k| each");
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t j0 = t * kTile;
    v8d p[kRows][2] = {}, s[kRows][2] = {}, a[kRows][2] = {};
    for (int64_t d = 0; d < D; ++d) {
      const double* kr = kt + (t * D + d) * kTile;  // tile t's row d: contiguous
      const v8d k0 = load8(kr), k1 = load8(kr + 8);
      const v8d ak0 = abs8(k0), ak1 = abs8(k1);
      // Unrolled, so that p, s and a stay in registers (rolled, GCC keeps
      // them in memory: a store and a load on every chain's every step).
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) {
        const v8d q = splat8(qb[r * D + d]), aq = splat8(aqb[r * D + d]);
        if constexpr (kSplit) {
          // x = RN(sigma + q k) (one rounding: the FMA), hi = x - sigma exact
          // (Sterbenz), a multiple of u sigma; the rest q k - hi, below u sigma, rounded once.
          const v8d sg = splat8(sigma[r]);
          const v8d hi0 = fma8(q, k0, sg) - sg, hi1 = fma8(q, k1, sg) - sg;
          p[r][0] = p[r][0] + hi0;  // exact: multiples of u sigma below sigma
          p[r][1] = p[r][1] + hi1;
          s[r][0] = s[r][0] + fma8(q, k0, -hi0);
          s[r][1] = s[r][1] + fma8(q, k1, -hi1);
        } else {
          dot2_step8(q, k0, p[r][0], s[r][0]);
          dot2_step8(q, k1, p[r][1], s[r][1]);
        }
        a[r][0] = fma8(aq, ak0, a[r][0]);  // one rounding per term (FMA)
        a[r][1] = fma8(aq, ak1, a[r][1]);
      }
    }
    for (int r = 0; r < kRows; ++r)
      for (int h = 0; h < 2; ++h) {
        v8d hi, lo;
        normalize8(p[r][h], s[r][h], hi, lo);
        store8(s_hi + r * n16 + j0 + 8 * h, hi);
        store8(s_lo + r * n16 + j0 + 8 * h, lo);
        store8(absd + r * n16 + j0 + 8 * h, a[r][h]);
      }
  }
}

// The value kernels' body, inlined into each clone of each: Dot2 on w_hi v,
// or (kSplit) the split against sigma[r] (dw_values_split_kernel); w_lo v into s.
template <bool kSplit>
__attribute__((always_inline)) inline void dw_values_rows(const double* v, int64_t vstride, int64_t c0,
                                                          const double* w_hi, const double* w_lo, int64_t stride,
                                                          int64_t n, const dd::DW* total, const double* sigma,
                                                          double* out) {
  static_assert(kCols == 16, "two vectors of 8 columns, p and s each, for 4 rows");
  v8d p[kRows][2] = {}, s[kRows][2] = {};
  for (int64_t j = 0; j < n; ++j) {
    const double* vr = v + j * vstride + c0;
    const v8d v0 = load8(vr), v1 = load8(vr + 8);
#pragma GCC unroll 4  // p and s in registers (dw_logit_tiles)
    for (int r = 0; r < kRows; ++r) {
      const v8d wh = splat8(w_hi[r * stride + j]), wl = splat8(w_lo[r * stride + j]);
      if constexpr (kSplit) {  // as in dw_logit_tiles: hi exact on sigma's grid, the rest rounded once
        const v8d sg = splat8(sigma[r]);
        const v8d hi0 = fma8(wh, v0, sg) - sg, hi1 = fma8(wh, v1, sg) - sg;
        p[r][0] = p[r][0] + hi0;
        p[r][1] = p[r][1] + hi1;
        s[r][0] = s[r][0] + fma8(wh, v0, -hi0);
        s[r][1] = s[r][1] + fma8(wh, v1, -hi1);
      } else {
        dot2_step8(wh, v0, p[r][0], s[r][0]);
        dot2_step8(wh, v1, p[r][1], s[r][1]);
      }
      // w_lo v_jc: below u |w v_jc|, one rounding into s.
      s[r][0] = fma8(wl, v0, s[r][0]);
      s[r][1] = fma8(wl, v1, s[r][1]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int h = 0; h < 2; ++h) {
      v8d hi, lo;
      normalize8(p[r][h], s[r][h], hi, lo);
      for (int l = 0; l < 8; ++l) out[r * kCols + 8 * h + l] = dd::div(dd::DW{hi[l], lo[l]}, total[r]).hi;
    }
}

}  // namespace

ATTNCHECK_SIMD_CLONES
void dw_logits_kernel(const double* qb, const double* aqb, const double* kt, int64_t D, int64_t n16, int64_t tiles,
                      double* s_hi, double* s_lo, double* absd) {
  dw_logit_tiles<false>(qb, aqb, nullptr, kt, D, n16, tiles, s_hi, s_lo, absd);
}

ATTNCHECK_SIMD_CLONES
void dw_logits_split_kernel(const double* qb, const double* aqb, const double* sigma, const double* kt, int64_t D,
                            int64_t n16, int64_t tiles, double* s_hi, double* s_lo, double* absd) {
  dw_logit_tiles<true>(qb, aqb, sigma, kt, D, n16, tiles, s_hi, s_lo, absd);
}

ATTNCHECK_SIMD_CLONES
dd::DW dw_offsets_kernel(double* __restrict s_hi, double* __restrict s_lo, const double* __restrict vis, double scale,
                         double* __restrict x_hi, double* __restrict x_lo, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    const dd::DW s = dd::mul(dd::DW{s_hi[j], s_lo[j]}, scale);
    s_hi[j] = s.hi;
    s_lo[j] = s.lo;
  }
  // The max in the DW order: lexicographic on (hi, lo) of normalized DWs.
  dd::DW m{-HUGE_VAL, 0.0};
  for (int64_t j = 0; j < n; ++j)
    if (vis[j] > 0 && (s_hi[j] > m.hi || (s_hi[j] == m.hi && s_lo[j] > m.lo))) m = {s_hi[j], s_lo[j]};
  for (int64_t j = 0; j < n; ++j) {
    const dd::DW x = dd::sub(dd::DW{s_hi[j], s_lo[j]}, m);
    x_hi[j] = vis[j] > 0 ? x.hi : 0.0;
    x_lo[j] = vis[j] > 0 ? x.lo : 0.0;
  }
  return m;
}

ATTNCHECK_SIMD_CLONES
dd::DW dw_masked_sum_kernel(double* __restrict w_hi, double* __restrict w_lo, const double* __restrict vis,
                            int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    w_hi[j] *= vis[j];
    w_lo[j] *= vis[j];
  }
  // Sequential: the bound (dw_accumulation_coefficient) counts this chain's order.
  double p = 0, s = 0;
  for (int64_t j = 0; j < n; ++j) {
    const dd::DW t = dd::two_sum(p, w_hi[j]);
    p = t.hi;
    s = s + (t.lo + w_lo[j]);
  }
  return dd::two_sum(p, s);
}

ATTNCHECK_SIMD_CLONES
void dw_values_kernel(const double* v, int64_t vstride, int64_t c0, const double* w_hi, const double* w_lo,
                      int64_t stride, int64_t n, const dd::DW* total, double* out) {
  dw_values_rows<false>(v, vstride, c0, w_hi, w_lo, stride, n, total, nullptr, out);
}

ATTNCHECK_SIMD_CLONES
void dw_values_split_kernel(const double* v, int64_t vstride, int64_t c0, const double* w_hi, const double* w_lo,
                            int64_t stride, int64_t n, const dd::DW* total, const double* sigma, double* out) {
  dw_values_rows<true>(v, vstride, c0, w_hi, w_lo, stride, n, total, sigma, out);
}

}  // namespace attncheck::oracle_detail
