#include "oracle/oracle.h"

#include "oracle/bound_arithmetic.h"
#include "oracle/oracle_paths.h"
#include "parallel/parallel_for.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attncheck {

namespace {

using oracle_detail::gamma;
using oracle_detail::kInf;

// The rows a head needs before a blocked path splits it rather than spreading heads.
constexpr int64_t kRowChunk = 64;

}  // namespace

bool row_in_finite_domain(const Problem& p, int64_t bh, int64_t i) {
  const Shape& sh = p.shape;
  // docs/tolerance.md, "The representable domain": what the arithmetic of
  // compute_dtype(t) must hold (the dot products' partial sums, the
  // unnormalised P.V accumulator), and for 16-bit formats what section 6
  // lets a correct implementation store in 16 bits (the pre-scaled query, the
  // logits scaled or not, and their differences s_j - m).
  const DType compute = compute_dtype(p.dtype);
  const double half_compute = max_finite(compute) / 2;
  const bool stored_narrower = compute != p.dtype;
  const double half_store = stored_narrower ? max_finite(p.dtype) / 2 : kInf;
  // Rounding of the computed logit before it is stored: within gamma(D + 3) a_j of the exact one.
  const double logit_rounding = gamma(static_cast<double>(sh.head_dim) + 3, unit_roundoff(compute));
  const double scale = std::abs(p.effective_scale());
  if (!std::isfinite(scale)) return false;
  for (int64_t d = 0; d < sh.head_dim; ++d) {  // finite, and finite once pre-scaled
    const double qd = p.q[p.q_at(bh, i, d)];
    if (!std::isfinite(qd) || !(scale * std::abs(qd) < std::min(half_compute, half_store))) return false;
  }
  // Every key counts, hidden ones too: implementations form all logits and mask
  // afterwards (adding -inf to an overflowed logit gives NaN), and multiply
  // hidden values by a zero weight (0 * inf = NaN). The sums are the ones the
  // exact computation could form, so all of them must stay representable.
  std::vector<double> col_sum(sh.value_dim, 0.0);
  bool sees_any = false;
  for (int64_t j = 0; j < sh.kv_len; ++j) {
    sees_any |= p.visible(bh, i, j);
    double raw = 0, dot = 0;
    for (int64_t d = 0; d < sh.head_dim; ++d) {
      const double qd = p.q[p.q_at(bh, i, d)], kd = p.k[p.k_at(bh, j, d)];
      if (!std::isfinite(kd)) return false;
      raw += std::abs(qd * kd);
      dot += qd * kd;
    }
    // The dot product's partial sums, formed before or after scaling, in the compute type.
    if (!(scale * raw < half_compute) || !(raw < half_compute)) return false;
    // The logit as a 16-bit format may store it, scaled or not (inf for f32/f64).
    const double stored = std::abs(dot) + logit_rounding * raw;
    if (!(scale * stored < half_store) || !(stored < half_store)) return false;
    for (int64_t c = 0; c < sh.value_dim; ++c) {
      const double vj = p.v[p.v_at(bh, j, c)];
      if (!std::isfinite(vj)) return false;
      col_sum[c] += std::abs(vj);
    }
  }
  // The unnormalised accumulator sum_j exp(s_j - m') v_jc of a streaming
  // implementation (weights in [0, 1] against any running max m') in the
  // compute type. (16-bit formats hold their output: it is a convex
  // combination of their values.)
  for (double s : col_sum)
    if (!(s < half_compute)) return false;
  // A row that sees no key computes nothing: its zeros are a convention of the
  // ABI, judged by fully_masked_rows_zero alone, not by the arithmetic laws.
  return sees_any;
}

void judge_empty_rows_as_zeros(OracleResult& o) {
  const std::size_t rows = o.entropy.size(), cols = rows ? o.exact.size() / rows : 0;
  for (std::size_t r = 0; r < rows; ++r)
    if (std::isnan(o.entropy[r]))
      for (std::size_t c = 0; c < cols; ++c) o.bound[r * cols + c] = 0;
}

bool in_finite_domain(const Problem& p) {
  for (int64_t bh = 0; bh < p.shape.batch * p.shape.heads; ++bh)
    for (int64_t i = 0; i < p.shape.q_len; ++i)
      if (!row_in_finite_domain(p, bh, i)) return false;
  return true;
}

OracleResult oracle(const Problem& p) {
  OracleResult o;
  const Shape& sh = p.shape;
  o.exact.assign(sh.out_size(), 0.0);
  o.bound.assign(sh.out_size(), 0.0);
  o.entropy.assign(sh.batch * sh.heads * sh.q_len, 0.0);
  o.row_in_domain.assign(sh.batch * sh.heads * sh.q_len, 0);
  const int64_t heads = sh.batch * sh.heads;
  const int64_t chunks = (sh.q_len + kRowChunk - 1) / kRowChunk;
  // f64 problems get the double-word path, the others the double path (oracle_paths.h).
  const bool f64 = compute_dtype(p.dtype) == DType::f64;
  const auto head = f64 ? oracle_detail::fast_head_f64 : oracle_detail::fast_head;
  // Pieces write disjoint rows of o. A path splits a head's rows itself; heads
  // go to the threads when there are too few rows to split (decode: one row per head).
  const double head_flop =
      (f64 ? 40.0 : 12.0) * static_cast<double>(sh.q_len * sh.kv_len * (sh.head_dim + sh.value_dim));
  if (chunks >= compute_threads()) {
    for (int64_t bh = 0; bh < heads; ++bh) head(p, bh, o);
  } else {
    parallel_for(heads, head_flop, [&](int64_t begin, int64_t end) {
      for (int64_t bh = begin; bh < end; ++bh) head(p, bh, o);
    });
  }
  return o;
}

Comparison compare_to_oracle(const Problem& p, const OracleResult& o, const std::vector<double>& out) {
  Comparison c;
  (void)p;
  for (std::size_t k = 0; k < out.size() && k < o.exact.size(); ++k) {
    if (std::isinf(o.bound[k])) continue;  // outside the representable domain: not judged
    ++c.judged;
    const double err = std::abs(out[k] - o.exact[k]);
    double ratio;
    if (std::isnan(err)) ratio = kInf;
    else if (o.bound[k] > 0) ratio = err / o.bound[k];
    else ratio = err > 0 ? kInf : 0;
    if (ratio > 1) { c.ok = false; ++c.violations; }
    if (ratio > c.worst_ratio || c.worst_index < 0) { c.worst_ratio = ratio; c.worst_index = static_cast<int64_t>(k); }
  }
  return c;
}

}  // namespace attncheck
