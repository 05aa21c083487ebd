// Batch ("array") entry points of the double-word arithmetic, over
// structure-of-arrays inputs (separate hi[] and lo[] arrays), compiled once per
// instruction set (AVX-512, AVX2+FMA, baseline) and picked at load time, so the
// f64 oracle gets vector speed from a build without -march (issue #12).
//
// Each returns, element for element, bit for bit what the scalar inline
// functions of double_double*.h return (same operations, no contraction, and
// the baseline's library fma is correctly rounded like the hardware's), so
// their error bounds carry over unchanged.
#pragma once

#include <cstdint>

#include "oracle/double_double.h"
#include "oracle/double_double_dot.h"

namespace attncheck::dd {

// out[i] = exp(hi[i] + lo[i]) (dd::exp, bound kExpErr). Outputs may alias the
// inputs element for element (out_hi == hi), but not overlap them otherwise.
void dd_exp_array(const double* hi, const double* lo, double* out_hi, double* out_lo, int64_t n);

// a . b by dd::dot2 (bound dot2_bound_factor(n) * abs_sum).
DotResult dd_dot(const double* a, const double* b, int64_t n);

// acc[c] += w * v[c] for c < n, in DW (dd::mul(DW, double) then dd::add(DW, DW)):
// one step of the P.V product, acc as separate hi[] and lo[] arrays.
// Each element's step is (acc + w v (1 + mu))(1 + alpha), |mu| <= kMulDoubleErr u^2,
// |alpha| <= kAddErr u^2; after N steps from acc = 0,
//   |acc - sum_k w_k v_k| <= axpy_chain_bound_factor(N) * sum_k |w_k v_k|.
void dd_axpy(DW w, const double* v, double* acc_hi, double* acc_lo, int64_t n);

// ((1 + kAddErr u^2)^(N+1) - 1), bounded by gamma_{N+1} with kAddErr u^2 for u
// (kMulDoubleErr <= kAddErr, so the product's error is one more such factor),
// inflated by (1 + 4u) for its own rounding.
constexpr double axpy_chain_bound_factor(int64_t steps) {
  const double ne = static_cast<double>(steps + 1) * kAddErr * kU2;
  return ne < 0.5 ? ne / (1 - ne) * (1 + 4 * kU) : 1e300;
}

}  // namespace attncheck::dd
