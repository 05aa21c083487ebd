#include "oracle/fast_kernels_f64.h"

#include <cmath>

#include "oracle/simd_native.h"


// This file is compiled with -ffp-contract=off (src/CMakeLists.txt): the
// error-free transformations below are written with plain * + -, which the
// FMA-enabled clones must not fuse (double_double.h, "Floating-point contraction").

namespace attncheck::oracle_detail {

namespace {

// One Dot2 step of dd::dot2 (double_double_dot.h) lane by lane:
// (h, r) = TwoProduct(x, y) (dd::two_prod), (p, e) = TwoSum(p, h) (dd::two_sum),
// s += e + r. After the steps of a chain, p + s is its dot product within
// gamma(steps)^2 sum |x y| [ORO05].
template <class S, class V>
ATTNCHECK_INLINE void dot2_step(V x, V y, V& p, V& s) {
  const V h = x * y;
  const V r = S::fma(x, y, -h);
  const V t = p + h;
  const V bb = t - p;
  const V e = (p - (t - bb)) + (h - bb);
  p = t;
  s = s + (e + r);
}

// TwoSum(p, s) lane by lane (dd::two_sum): the chain's p + s as a normalized DW.
template <class V>
ATTNCHECK_INLINE void normalize(V p, V s, V& hi, V& lo) {
  hi = p + s;
  const V bb = hi - p;
  lo = (p - (hi - bb)) + (s - bb);
}

// Vectors per pass of the kernels below: each row holds three accumulators
// (p, s and |q||k|, or p and s) per vector, kRows rows. Two vectors of keys
// or columns fit AVX-512's 32 registers; with 16 (AVX2, SSE2) one does.
template <class S>
inline constexpr int kVecs = S::kD == 8 ? 2 : 1;

// The logit kernels' body: Dot2 per term, or (kSplit) the split against
// sigma[r] (dw_logits_split_kernel). Keys in passes of kVecs vectors.
template <class S, bool kSplit>
ATTNCHECK_INLINE void dw_logit_tiles(const double* qb, const double* aqb, const double* sigma, const double* kt,
                                     int64_t D, int64_t n16, int64_t tiles, double* s_hi, double* s_lo,
                                     double* absd) {
  using V = typename S::d;
  constexpr int kW = S::kD, kN = kVecs<S>;
  static_assert(kTile % (kN * kW) == 0 && kRows == 4, "4 rows x kN vectors of keys: p, s and |q||k| each");
  for (int64_t t = 0; t < tiles; ++t)
    for (int c = 0; c < kTile; c += kN * kW) {  // keys t kTile + [c, c + kN kW)
      const int64_t j0 = t * kTile + c;
      V p[kRows][kN] = {}, s[kRows][kN] = {}, a[kRows][kN] = {};
      for (int64_t d = 0; d < D; ++d) {
        const double* kr = kt + (t * D + d) * kTile + c;  // tile t's row d: contiguous
        V k[kN], ak[kN];
        #pragma GCC unroll 8  // whole: the vectors stay in registers
        for (int h = 0; h < kN; ++h) {
          k[h] = S::load(kr + kW * h);
          ak[h] = S::abs(k[h]);
        }
        // Unrolled, so that p, s and a stay in registers (rolled, GCC keeps
        // them in memory: a store and a load on every chain's every step).
#pragma GCC unroll 4
        for (int r = 0; r < kRows; ++r) {
          const V q = S::splat(qb[r * D + d]), aq = S::splat(aqb[r * D + d]);
          #pragma GCC unroll 8  // whole: the vectors stay in registers
          for (int h = 0; h < kN; ++h) {
            if constexpr (kSplit) {
              // x = RN(sigma + q k) (one rounding: the FMA), hi = x - sigma exact
              // (Sterbenz), a multiple of u sigma; the rest q k - hi, below u sigma, rounded once.
              const V sg = S::splat(sigma[r]);
              const V hi = S::fma(q, k[h], sg) - sg;
              p[r][h] = p[r][h] + hi;  // exact: multiples of u sigma below sigma
              s[r][h] = s[r][h] + S::fma(q, k[h], -hi);
            } else {
              dot2_step<S>(q, k[h], p[r][h], s[r][h]);
            }
            a[r][h] = S::fma(aq, ak[h], a[r][h]);  // one rounding per term (FMA)
          }
        }
      }
      for (int r = 0; r < kRows; ++r)
        #pragma GCC unroll 8  // whole: the vectors stay in registers
        for (int h = 0; h < kN; ++h) {
          V hi, lo;
          normalize(p[r][h], s[r][h], hi, lo);
          S::store(s_hi + r * n16 + j0 + kW * h, hi);
          S::store(s_lo + r * n16 + j0 + kW * h, lo);
          S::store(absd + r * n16 + j0 + kW * h, a[r][h]);
        }
    }
}

// The value kernels' body: Dot2 on w_hi v, or (kSplit) the split against
// sigma[r] (dw_values_split_kernel); w_lo v into s. Columns in passes of kVecs vectors.
template <class S, bool kSplit>
ATTNCHECK_INLINE void dw_values_rows(const double* v, int64_t vstride, int64_t c0, const double* w_hi,
                                     const double* w_lo, int64_t stride, int64_t n, const dd::DW* total,
                                     const double* sigma, double* out) {
  using V = typename S::d;
  constexpr int kW = S::kD, kN = kVecs<S>;
  static_assert(kCols % (kN * kW) == 0, "whole passes of kN vectors of columns, p and s each, for 4 rows");
  for (int c = 0; c < kCols; c += kN * kW) {  // columns c0 + [c, c + kN kW)
    V p[kRows][kN] = {}, s[kRows][kN] = {};
    for (int64_t j = 0; j < n; ++j) {
      const double* vr = v + j * vstride + c0 + c;
      V vv[kN];
      #pragma GCC unroll 8  // whole: the vectors stay in registers
      for (int h = 0; h < kN; ++h) vv[h] = S::load(vr + kW * h);
#pragma GCC unroll 4  // p and s in registers (dw_logit_tiles)
      for (int r = 0; r < kRows; ++r) {
        const V wh = S::splat(w_hi[r * stride + j]), wl = S::splat(w_lo[r * stride + j]);
        #pragma GCC unroll 8  // whole: the vectors stay in registers
        for (int h = 0; h < kN; ++h) {
          if constexpr (kSplit) {  // as in dw_logit_tiles: hi exact on sigma's grid, the rest rounded once
            const V sg = S::splat(sigma[r]);
            const V hi = S::fma(wh, vv[h], sg) - sg;
            p[r][h] = p[r][h] + hi;
            s[r][h] = s[r][h] + S::fma(wh, vv[h], -hi);
          } else {
            dot2_step<S>(wh, vv[h], p[r][h], s[r][h]);
          }
          // w_lo v_jc: below u |w v_jc|, one rounding into s.
          s[r][h] = S::fma(wl, vv[h], s[r][h]);
        }
      }
    }
    for (int r = 0; r < kRows; ++r)
      #pragma GCC unroll 8  // whole: the vectors stay in registers
      for (int h = 0; h < kN; ++h) {
        V hi, lo;
        normalize(p[r][h], s[r][h], hi, lo);
        for (int l = 0; l < kW; ++l)
          out[r * kCols + c + kW * h + l] = dd::div(dd::DW{hi[l], lo[l]}, total[r]).hi;
      }
  }
}

}  // namespace

void dw_logits_kernel(const double* qb, const double* aqb, const double* kt, int64_t D, int64_t n16, int64_t tiles,
                      double* s_hi, double* s_lo, double* absd) {
  run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    dw_logit_tiles<SimdOf<decltype(s)>, false>(qb, aqb, nullptr, kt, D, n16, tiles, s_hi, s_lo, absd);
  });
}

void dw_logits_split_kernel(const double* qb, const double* aqb, const double* sigma, const double* kt, int64_t D,
                            int64_t n16, int64_t tiles, double* s_hi, double* s_lo, double* absd) {
  run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    dw_logit_tiles<SimdOf<decltype(s)>, true>(qb, aqb, sigma, kt, D, n16, tiles, s_hi, s_lo, absd);
  });
}

namespace {

// Scalar loops, vectorised by the compiler in each build (the restrict
// qualifiers, kept through inlining, let it).
ATTNCHECK_INLINE dd::DW dw_offsets(double* __restrict s_hi, double* __restrict s_lo, const double* __restrict vis,
                                   double scale, double* __restrict x_hi, double* __restrict x_lo, int64_t n) {
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

ATTNCHECK_INLINE dd::DW dw_masked_sum(double* __restrict w_hi, double* __restrict w_lo, const double* __restrict vis,
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

}  // namespace

dd::DW dw_offsets_kernel(double* s_hi, double* s_lo, const double* vis, double scale, double* x_hi, double* x_lo,
                         int64_t n) {
  return run_in_vector_build(
      [&](auto) ATTNCHECK_INLINE_LAMBDA { return dw_offsets(s_hi, s_lo, vis, scale, x_hi, x_lo, n); });
}

dd::DW dw_masked_sum_kernel(double* w_hi, double* w_lo, const double* vis, int64_t n) {
  return run_in_vector_build([&](auto) ATTNCHECK_INLINE_LAMBDA { return dw_masked_sum(w_hi, w_lo, vis, n); });
}

void dw_values_kernel(const double* v, int64_t vstride, int64_t c0, const double* w_hi, const double* w_lo,
                      int64_t stride, int64_t n, const dd::DW* total, double* out) {
  run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    dw_values_rows<SimdOf<decltype(s)>, false>(v, vstride, c0, w_hi, w_lo, stride, n, total, nullptr, out);
  });
}

void dw_values_split_kernel(const double* v, int64_t vstride, int64_t c0, const double* w_hi, const double* w_lo,
                            int64_t stride, int64_t n, const dd::DW* total, const double* sigma, double* out) {
  run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    dw_values_rows<SimdOf<decltype(s)>, true>(v, vstride, c0, w_hi, w_lo, stride, n, total, sigma, out);
  });
}

}  // namespace attncheck::oracle_detail
