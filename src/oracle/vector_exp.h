// exp over an array of non-positive arguments, vectorised, with a stated error:
// the weights w_j = exp(s_j - m) of the oracle's double path.
//
// Method (Cody and Waite): x = n ln2 + r with n = round(x / ln2), |r| <= ln2 / 2,
// r formed with FMA against ln2 split in two doubles; exp(r) by its Taylor
// polynomial of degree 13 (truncation below 0.04 u on |r| <= 0.347) in Horner
// form; the result scaled by 2^n built from its bits. The error analysis
// (docs/tolerance.md, "The oracle's own exp") gives under 4 ulps; the bound
// counts kVectorExpUlps = 8, and tests/core/vector_exp_test.cpp measures the
// largest error against long double on millions of arguments. Arguments below
// -708 (where 2^n would leave the normal range), NaN and -inf go to std::exp.
#pragma once

#include <cstdint>

namespace attncheck::oracle_detail {

inline constexpr double kVectorExpUlps = 8;

// y[t] = exp(x[t]) (written for x[t] <= 0; arguments up to 708 are computed
// within the same error). x and y must not overlap.
void exp_array(const double* x, double* y, int64_t n);

// One row's weights, in one pass over keys [0, n) (n a multiple of 8, as the
// per-key kernels of fast_kernels.h): x_j = s_j - m for the keys the row sees
// (vis_j = 1), 0 for the others; w_j = exp(x_j) vis_j; returns sum_j w_j,
// in masked_sum_kernel's lane order. The same values as exp_array over x,
// then masked_sum_kernel, with two passes over the row fewer.
double exp_weights(const double* s, const double* vis, double m, double* x, double* w, int64_t n);

}  // namespace attncheck::oracle_detail
