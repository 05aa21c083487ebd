// A compensated dot product (Dot2 of [ORO05]) returning a double-word, and
// its error bound: the logits q . k of the f64 oracle (issue #12).
#pragma once

#include <cmath>
#include <cstdint>

#include "oracle/double_double.h"

namespace attncheck::dd {

// Dot2 runs kDotLanes independent accumulators (element i goes to lane i mod
// kDotLanes): the sequential TwoSum chain of [ORO05, Algorithm 5.3] cannot be
// vectorised without reassociating, so the lanes are the vector and the
// analysis is per lane. 16 lanes: two AVX-512 or four AVX2 vectors, enough to
// hide the add latency of the chain.
inline constexpr int kDotLanes = 16;

struct DotResult {
  DW value;        // a . b
  double abs_sum;  // sum_i |RN(a_i b_i)| computed in double: the scale of the error
};

// Bound: |value - a.b| <= dot2_bound_factor(n) * abs_sum (abs_sum as returned).
// Barring underflow (a product below 2^-969 loses its error term: add 2^-1074
// per such product) and overflow.
//
// Derivation. Per lane of m <= ceil(n/16) terms: TwoProduct gives h_i + r_i =
// a_i b_i exactly, TwoSum keeps p + sum q_i = sum h_i exactly, so the lane's
// exact dot is p + sum (q_i + r_i); the only error is the summation of the
// q_i + r_i into s in double (each term at most m roundings: gamma_m), and
// sum |q_i| + |r_i| <= m u (1+u)^m sum |a_i b_i| <= gamma_m sum |a_i b_i|.
// So |p + s - lane dot| <= gamma_m^2 sum_lane |a_i b_i| [ORO05, proof of Prop. 5.5].
// The lanes are combined exactly into DWs (two_sum), then by a tree of
// log2(16) = 4 AccurateDWPlusDW levels: ((1 + kAddErr u^2)^4 - 1) times
// sum |lane values| <= (1 + gamma_m^2) sum |a_i b_i|. Finally sum |a_i b_i| <=
// (1+u) abs_sum / (1 - (m + 16) u) (each |h_i| is within u of |a_i b_i|; each
// is summed with at most m + 16 roundings), and the result is inflated by
// (1 + 16u) to cover the rounding of this very formula.
constexpr double dot2_bound_factor(int64_t n) {
  const double m = static_cast<double>((n + kDotLanes - 1) / kDotLanes);
  if (m * kU >= 0.5) return HUGE_VAL;
  const double gamma_m = m * kU / (1 - m * kU);
  const double lane = gamma_m * gamma_m;
  const double eps = kAddErr * kU2;
  const double tree = 4 * eps / (1 - 4 * eps);  // >= (1 + eps)^4 - 1
  const double exact_to_computed = (1 + kU) / (1 - (m + kDotLanes) * kU);
  return (lane + tree * (1 + lane)) * exact_to_computed * (1 + 16 * kU);
}

// The dot product itself, inlined so that each caller compiles it for its own
// target; dd_dot (double_double_array.h) is the multiversioned entry point.
ATTNCHECK_DD_INLINE DotResult dot2(const double* __restrict a, const double* __restrict b, int64_t n) {
  double p[kDotLanes] = {}, s[kDotLanes] = {}, abs_sum[kDotLanes] = {};
  // One Dot2 step in lane j: (h, r) = TwoProduct, (p, q) = TwoSum(p, h), s += q + r.
  const auto step = [&](int j, double x, double y) ATTNCHECK_DD_LAMBDA_INLINE {
    const DW h = two_prod(x, y);
    const DW t = two_sum(p[j], h.hi);
    p[j] = t.hi;
    s[j] = s[j] + (t.lo + h.lo);
    abs_sum[j] = abs_sum[j] + std::fabs(h.hi);
  };
  int64_t i = 0;
  for (; i + kDotLanes <= n; i += kDotLanes)
    for (int j = 0; j < kDotLanes; ++j) step(j, a[i + j], b[i + j]);
  for (int j = 0; i + j < n; ++j) step(j, a[i + j], b[i + j]);

  DW v[kDotLanes];
  for (int j = 0; j < kDotLanes; ++j) v[j] = two_sum(p[j], s[j]);
  for (int w = kDotLanes / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) {
      v[j] = add(v[j], v[j + w]);
      abs_sum[j] = abs_sum[j] + abs_sum[j + w];
    }
  return {v[0], abs_sum[0]};
}

}  // namespace attncheck::dd
