// The double-word loops of the oracle's f64 path (fast_rows_f64.cpp), over raw
// arrays, built for each vector ISA (simd_native.h) and compiled without contraction
// (src/CMakeLists.txt), and the bounds of what they compute. Shapes, for a
// block of kRows query rows of one head (fast_kernels.h):
//   qb [kRows][D], kt [n16/kTile][D][kTile]     the rows, K^T by tiles (fast_kernels.h)
//   per-key rows [kRows][stride], stride = n16  logits, weights: hi and lo parts
//   v [n][vstride]                              V padded to whole kCols columns
// A double-word (DW) is held as two arrays of the same shape, hi and lo,
// normalized (hi = RN(hi + lo)); docs/tolerance.md, "The f64 path", derives
// the bounds below.
#pragma once

#include <cmath>
#include <cstdint>

#include "oracle/bound_arithmetic.h"
#include "oracle/double_double.h"
#include "oracle/fast_kernels.h"

namespace attncheck::oracle_detail {

// Dot2 for each (row, key) of tiles [0, tiles), lanes over keys, sequential
// over d: s_hi[r][j] + s_lo[r][j] = q_r . k_j, a normalized DW; and
// absd[r][j] = sum_d |q_rd| |k_jd| in double, one FMA per term.
void dw_logits_kernel(const double* qb, const double* aqb, const double* kt, int64_t D, int64_t n16, int64_t tiles,
                      double* s_hi, double* s_lo, double* absd);

// The same by splitting against a power of two sigma[r] per row (the
// ExtractScalar of [ROO08], with the product exact inside one FMA): per term
// hi = RN(sigma + q_d k_jd) - sigma, exact and a multiple of u sigma, summed
// exactly; the rest q_d k_jd - hi (below u sigma) rounded once and summed in
// double. 5 operations a term where Dot2 takes 10. Requires, for every key of
// the tiles, sum_d |q_rd k_jd| <= sigma[r] / 2 and 2^-960 <= sigma[r] <= 2^1000
// (dw_split_sigma); its error is an absolute dw_split_logit_error(D) sigma[r]
// rather than relative to a_j.
void dw_logits_split_kernel(const double* qb, const double* aqb, const double* sigma, const double* kt, int64_t D,
                            int64_t n16, int64_t tiles, double* s_hi, double* s_lo, double* absd);

// One row's logits over keys [0, n), n a multiple of 8, vis as in fast_kernels.h:
// s = scale * s in place (dd::mul), m = the largest visible s (hi, then lo:
// the DW order), x = s - m (dd::sub) for visible keys and 0 for the others.
// Returns m (hi = -inf when no key is visible).
dd::DW dw_offsets_kernel(double* s_hi, double* s_lo, const double* vis, double scale, double* x_hi, double* x_lo,
                         int64_t n);

// w *= vis (both parts); returns sum_j w_j as a normalized DW: a TwoSum chain
// over j (hi parts), the lo parts and the chain's errors summed in double.
dd::DW dw_masked_sum_kernel(double* w_hi, double* w_lo, const double* vis, int64_t n);

// Over keys [0, n), columns [c0, c0 + kCols), for each row r of the block:
//   out[r][c] = RN((sum_j w_rj v_jc) / total_r),  out [kRows][kCols],
// the sum by Dot2 over j (TwoProduct of w_hi v, TwoSum chain, the errors and
// w_lo v in double), lanes over columns, then dd::div by the DW total.
void dw_values_kernel(const double* v, int64_t vstride, int64_t c0, const double* w_hi, const double* w_lo,
                      int64_t stride, int64_t n, const dd::DW* total, double* out);

// The same by splitting against a power of two sigma[r] per row, as
// dw_logits_split_kernel does: each w_hi v_jc's part on sigma's grid summed
// exactly, the rest and w_lo v_jc in double. Requires sum_j w_hi_rj |v_jc|
// <= sigma[r] / 2 for every column and 2^-960 <= sigma[r] <= 2^1000
// (dw_split_sigma of 1 and total_r (1 + 2^-40) max_jc |v_jc|); its error is an
// absolute dw_split_value_error(n) sigma[r] in the numerator.
void dw_values_split_kernel(const double* v, int64_t vstride, int64_t c0, const double* w_hi, const double* w_lo,
                            int64_t stride, int64_t n, const dd::DW* total, const double* sigma, double* out);

// --- The bounds of the kernels above (docs/tolerance.md, "The f64 path") --------
// Each is a coefficient in absolute terms of the double quantities the bound
// already computes; u = 2^-53, gamma(k) = gamma(k, u). Inflated by (1 + 8u)
// for the rounding of these very formulas and of their products.

// Logit error of the oracle, per unit of a_j = |scale| sum_d |q_d k_jd| as
// dw_logits_kernel and scale_logits_kernel compute it: the sequential Dot2's
// gamma(D)^2 [ORO05, Prop. 5.5 without its final rounding], the DW * double
// scale (dd::kMulDoubleErr u^2 of the logit, |logit| <= a_j), and a_j's own
// rounding (the computed sum_d |q_d||k_jd| has at most 2D roundings, a_j one more).
inline double dw_logit_factor(int64_t D) {
  const double u = dd::kU, g = gamma(static_cast<double>(D), u);
  const double dot = g * g * (1 + dd::kMulDoubleErr * dd::kU2) + dd::kMulDoubleErr * dd::kU2;
  return dot * (1 + u) / (1 - gamma(2.0 * static_cast<double>(D), u)) * (1 + 8 * u);
}

// dw_logits_split_kernel's sigma for a row whose largest |q_d| is qmax, over
// keys whose sum_d |k_jd| is at most k1max (both as computed, each with at
// most D roundings): the least power of two >= 2 qmax k1max (1 + gamma(D + 2));
// 0 where that is outside [2^-960, 2^1000] or not finite (Dot2 then).
inline double dw_split_sigma(double qmax, double k1max, int64_t D) {
  const double x = 2 * qmax * k1max * (1 + gamma(static_cast<double>(D) + 2, dd::kU));
  if (!(x <= 0x1p1000)) return 0.0;  // too large, inf or NaN
  if (x < 0x1p-960) return x == 0 ? 0x1p-960 : 0.0;  // q or the keys all zero: any sigma holds them
  int e = 0;
  std::frexp(x, &e);  // x = m 2^e, m in [1/2, 1)
  return std::ldexp(1.0, e);
}

// dw_logits_split_kernel's error per unit of sigma (before the scale): each
// rest rounded once (u^2 sigma), their sum in double (gamma(D - 1) D u sigma
// (1 + u)); its underflow is dw_logit_floor's. Then the DW * double scale
// (dd::kMulDoubleErr u^2 of the logit, <= a_j: dw_split_logit_factor).
inline double dw_split_logit_error(int64_t D) {
  const double u = dd::kU, n = static_cast<double>(D);
  return (n * dd::kU2 + gamma(n - 1, u) * n * u * (1 + u)) * (1 + 8 * u);
}
inline double dw_split_logit_factor(int64_t D) {
  const double u = dd::kU;
  return dd::kMulDoubleErr * dd::kU2 * (1 + u) / (1 - gamma(2.0 * static_cast<double>(D), u)) * (1 + 8 * u);
}

// The oracle's coefficient of sum_j p_j |v_jc| for a row of n visible keys:
// the numerator's Dot2 over j, gamma(2n + 1) gamma(n + 3); the total's TwoSum
// chain, gamma(n) gamma(n + 1); the DW division, dd::kDivErr u^2; and the
// computed sum_j (p_j + shift_j) |v_jc| against the exact one (gamma(n + 4)).
inline double dw_accumulation_coefficient(double n) {
  const double u = dd::kU;
  const double num = gamma(2 * n + 1, u) * gamma(n + 3, u), tot = gamma(n, u) * gamma(n + 1, u);
  return (num + tot + dd::kDivErr * dd::kU2) * (1 + gamma(n + 4, u)) * (1 + 8 * u);
}

// dw_values_split_kernel's numerator error per unit of sigma, n keys: each
// rest rounded once (n u^2), the rests and the w_lo v_jc (|w_lo| <= u w_hi, so
// their sum is below u sigma / 2) summed in double with 2n roundings
// (gamma(2n) u (n (1 + u) + 1/2)); underflow is dw_output_floor's.
inline double dw_split_value_error(double n) {
  const double u = dd::kU;
  return (n * dd::kU2 + gamma(2 * n, u) * u * (n * (1 + u) + 0.5)) * (1 + 8 * u);
}

// Underflow (absolute; the DW bounds hold barring it): per unit of
// max(1, |scale|), a logit loses at most 2^-1074 per product and sum of its
// Dot2 below the normal range (3D + 2 of them); per unit of (1 + max_j |v_jc|
// + |o_c|), an output at most 2^-1074 per weight, product and sum of its
// numerator (3n + 2 of them), over a total >= 1.
inline double dw_logit_floor(int64_t D) { return (3 * static_cast<double>(D) + 2) * 0x1p-1074; }
inline double dw_output_floor(double n) { return (3 * n + 2) * 0x1p-1074; }

}  // namespace attncheck::oracle_detail
