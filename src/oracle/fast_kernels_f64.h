// The double-word loops of the oracle's f64 path (fast_rows_f64.cpp), over raw
// arrays, multiversioned (simd_clones.h) and compiled without contraction
// (src/CMakeLists.txt), and the bounds of what they compute. Shapes, for a
// block of kRows query rows of one head (fast_kernels.h):
//   qb [kRows][D], kt [n16/kTile][D][kTile]     the rows, K^T by tiles (fast_kernels.h)
//   per-key rows [kRows][stride], stride = n16  logits, weights: hi and lo parts
//   v [n][vstride]                              V padded to whole kCols columns
// A double-word (DW) is held as two arrays of the same shape, hi and lo,
// normalized (hi = RN(hi + lo)); docs/tolerance.md, "The f64 path", derives
// the bounds below.
#pragma once

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

// The oracle's coefficient of sum_j p_j |v_jc| for a row of n visible keys:
// the numerator's Dot2 over j, gamma(2n + 1) gamma(n + 3); the total's TwoSum
// chain, gamma(n) gamma(n + 1); the DW division, dd::kDivErr u^2; and the
// computed sum_j (p_j + shift_j) |v_jc| against the exact one (gamma(n + 4)).
inline double dw_accumulation_coefficient(double n) {
  const double u = dd::kU;
  const double num = gamma(2 * n + 1, u) * gamma(n + 3, u), tot = gamma(n, u) * gamma(n + 1, u);
  return (num + tot + dd::kDivErr * dd::kU2) * (1 + gamma(n + 4, u)) * (1 + 8 * u);
}

// Underflow (absolute; the DW bounds hold barring it): per unit of
// max(1, |scale|), a logit loses at most 2^-1074 per product and sum of its
// Dot2 below the normal range (3D + 2 of them); per unit of (1 + max_j |v_jc|
// + |o_c|), an output at most 2^-1074 per weight, product and sum of its
// numerator (3n + 2 of them), over a total >= 1.
inline double dw_logit_floor(int64_t D) { return (3 * static_cast<double>(D) + 2) * 0x1p-1074; }
inline double dw_output_floor(double n) { return (3 * n + 2) * 0x1p-1074; }

}  // namespace attncheck::oracle_detail
