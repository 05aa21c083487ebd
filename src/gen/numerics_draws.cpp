#include "gen/numerics_draws.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "problem/dtype.h"
#include "problem/kv_numerics.h"

namespace attncheck::gen {

namespace {

// KV_PRECISION's precondition on the call's partial sums: every sum_c |q_c k_jc| below 2^15
// (binary16 cannot overflow). Bounded per query row by sum_c |q_c| K_c, K_c the largest live
// |k_jc| of the row's kv head over its keys (dead keys hold NaN poison: skipped); where the
// bound reaches 2^15, q is scaled by a power of two (exact) until it is below 2^14.
void keep_partial_sums_in_binary16(Problem& p) {
  const Shape& s = p.shape;
  const int64_t D = s.head_dim, kvh = s.batch * s.kv_head_count();
  std::vector<double> kmax(static_cast<std::size_t>(kvh * D), 0.0);
  for (int64_t h = 0; h < kvh; ++h)
    for (int64_t j = 0; j < s.kv_len; ++j)
      for (int64_t c = 0; c < D; ++c) {
        const double k = std::abs(p.k[p.k_at(h, j, c)]);
        if (std::isfinite(k)) kmax[h * D + c] = std::max(kmax[h * D + c], k);
      }
  double worst = 0;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      double sum = 0;
      for (int64_t c = 0; c < D; ++c) sum += std::abs(p.q[p.q_at(bh, i, c)]) * kmax[p.kv_of(bh) * D + c];
      worst = std::max(worst, sum);
    }
  int e = 0;
  while (std::isfinite(worst) && std::ldexp(worst, -e) >= kNumericsQueryLimit / 2) ++e;  // (inf: never ends)
  if (e > 0)
    for (double& x : p.q) x = round_to(p.dtype, std::ldexp(x, -e));  // (f32: exact unless it goes subnormal)
}

// KV_PRECISION's precondition on keys and values: a side kept in the dtype (the other one
// stored in a 16-bit format) may hold elements far past 2^15 (the large value families): its
// finite elements are scaled by a power of two until below 2^14. A side stored in a format
// holds values near 1 times its scales already.
void keep_dtype_side_in_binary16(Problem& p, bool is_k) {
  if ((is_k ? p.k_format : p.v_format) != KvFormat::dtype) return;
  std::vector<double>& x = is_k ? p.k : p.v;
  double worst = 0;
  for (double e : x)
    if (std::isfinite(e)) worst = std::max(worst, std::abs(e));
  int e = 0;
  while (std::isfinite(worst) && std::ldexp(worst, -e) >= kNumericsQueryLimit / 2) ++e;  // (inf: never ends)
  if (e > 0)
    for (double& y : x)
      if (std::isfinite(y)) y = round_to(p.dtype, std::ldexp(y, -e));
}

}  // namespace

void apply_declared_numerics(Problem& p, uint32_t declared) {
  if (declared == 0 || !p.kv_formatted()) return;
  // 1.5 * 2^14: below 2^15 and exact in f16, bf16 and f32.
  constexpr double kLargeQuery = 24576.0;
  for (double& x : p.q)
    if (!(std::abs(x) < kNumericsQueryLimit)) x = std::isnan(x) ? 0.0 : std::copysign(kLargeQuery, x);
  // Where KV_PRECISION applies: keys and values below 2^15 (a side in the dtype scaled there;
  // the formats draw values near 1 times their scales) and the partial sums of q.k too.
  if (numerics_that_apply(p, declared) & kNumericsKvPrecision) {
    keep_dtype_side_in_binary16(p, true);
    keep_dtype_side_in_binary16(p, false);
    keep_partial_sums_in_binary16(p);
  }
  p.numerics = numerics_that_apply(p, declared) & kJudgedNumerics;
}

}  // namespace attncheck::gen
