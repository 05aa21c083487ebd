#include "oracle/oracle.h"

#include "oracle/bound_arithmetic.h"
#include "oracle/logit_chain.h"
#include "oracle/oracle_memo.h"
#include "oracle/oracle_paths.h"
#include "parallel/parallel_for.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

namespace attncheck {

namespace {

using oracle_detail::gamma;
using oracle_detail::kInf;

// The rows a head needs before a blocked path splits it rather than spreading heads.
constexpr int64_t kRowChunk = 64;

}  // namespace

void oracle_detail::mark_padding_row(const Problem& p, int64_t bh, int64_t i, OracleResult& o) {
  const int64_t row = bh * p.shape.q_len + i;
  for (int64_t c = 0; c < p.shape.value_dim; ++c) {
    o.exact[p.out_at(bh, i, c)] = 0;
    o.bound[p.out_at(bh, i, c)] = kInf;
  }
  o.row_in_domain[row] = 0;
  o.entropy[row] = std::numeric_limits<double>::quiet_NaN();
  o.lse_exact[row] = 0;
  o.lse_bound[row] = kInf;
}

OracleResult oracle_detail::sized_result(const Shape& sh) {
  OracleResult o;
  o.exact.assign(sh.out_size(), 0.0);
  o.bound.assign(sh.out_size(), 0.0);
  o.entropy.assign(sh.rows(), 0.0);
  o.row_in_domain.assign(sh.rows(), 0);
  o.lse_exact.assign(sh.rows(), 0.0);
  o.lse_bound.assign(sh.rows(), 0.0);
  return o;
}

void oracle_detail::empty_row_lse(const Problem& p, int64_t bh, int64_t i, const Arithmetic& orc, OracleResult& o) {
  const int64_t row = bh * p.shape.q_len + i;
  const double s = p.sink_of(bh);
  const Arithmetic dt = arithmetic_of(p);
  o.lse_exact[row] = s;
  const bool inside = !p.sinks.empty() && std::abs(s) < sink_limit(p);
  o.lse_bound[row] =
      inside ? lse_bound(dt, orc, logit_error(dt, 0, s, 0, 0, 0), logit_error(orc, 0, s, 0, 0, 0), 1, s, 0, s, 0) : kInf;
}

double oracle_detail::sink_limit(const Problem& p) {
  const DType compute = compute_dtype(p.dtype);
  return std::min(max_finite(compute), compute != p.dtype ? max_finite(p.dtype) : kInf) / 2;
}

namespace {

// row_in_finite_domain's tests; `sees_key` is whether the row sees a key (the
// last condition, which row_representable leaves out).
bool row_domain(const Problem& p, int64_t bh, int64_t i, bool& sees_key) {
  const Shape& sh = p.shape;
  sees_key = false;
  if (!p.row_exists(bh, i)) return false;  // padding: not judged, never read
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
  // v2: the sink is a logit as any other; the chain of soft-cap, bias and
  // ALiBi (logit_chain.h) must stay below what a logit may reach, with the
  // score's rounding (the transforms pass it through unamplified) and each
  // step's (a relative 8 u covers them).
  if (!p.sinks.empty() && !(std::abs(p.sink_of(bh)) < oracle_detail::sink_limit(p))) return false;
  const oracle_detail::RowTransform tr = oracle_detail::row_transform(p, bh, i);
  const double chain_limit = std::min(half_compute, half_store);
  const double chain_slack = 1 + 8 * unit_roundoff(compute);
  // Every key that exists counts, hidden ones too: implementations form all
  // logits and mask afterwards (adding -inf to an overflowed logit gives NaN),
  // and multiply hidden values by a zero weight (0 * inf = NaN). The sums are
  // the ones the exact computation could form, so all of them must stay
  // representable. Padding keys (j >= kv_lens[b]) are not read: they may hold anything.
  const int64_t kv = p.kv_of(bh);
  const int64_t keys = std::min<int64_t>(sh.kv_len, p.kv_len_of(bh / sh.heads));
  std::vector<double> col_sum(sh.value_dim, 0.0);
  bool sees_any = false;
  for (int64_t j = 0; j < keys; ++j) {
    sees_any |= p.visible(bh, i, j);
    double raw = 0, dot = 0;
    for (int64_t d = 0; d < sh.head_dim; ++d) {
      const double qd = p.q[p.q_at(bh, i, d)], kd = p.k[p.k_at(kv, j, d)];
      if (!std::isfinite(kd)) return false;
      raw += std::abs(qd * kd);
      dot += qd * kd;
    }
    // The dot product's partial sums, formed before or after scaling, in the compute type.
    if (!(scale * raw < half_compute) || !(raw < half_compute)) return false;
    // The logit as a 16-bit format may store it, scaled or not (inf for f32/f64).
    const double stored = std::abs(dot) + logit_rounding * raw;
    if (!(scale * stored < half_store) || !(stored < half_store)) return false;
    if (tr.any()) {
      // A bias is finite or -inf (which hides the key: its logit is never formed past the bias).
      const double bias = tr.bias ? tr.bias[j] : 0.0;
      if (std::isnan(bias) || bias == kInf) return false;
      if (bias != -kInf) {
        const auto ch = oracle_detail::logit_chain<double>(tr, j, p.effective_scale() * dot);
        const double reach = (oracle_detail::chain_magnitude(ch) + logit_rounding * scale * raw) * chain_slack;
        if (!(reach < chain_limit)) return false;
      }
    }
    for (int64_t c = 0; c < sh.value_dim; ++c) {
      const double vj = p.v[p.v_at(kv, j, c)];
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
  sees_key = sees_any;
  return true;
}

}  // namespace

bool row_in_finite_domain(const Problem& p, int64_t bh, int64_t i) {
  bool sees_key = false;
  // A row that sees no key computes nothing: its zeros are a convention of the
  // ABI, judged by fully_masked_rows_zero alone, not by the arithmetic laws.
  return row_domain(p, bh, i, sees_key) && sees_key;
}

bool row_representable(const Problem& p, int64_t bh, int64_t i) {
  bool sees_key = false;
  return row_domain(p, bh, i, sees_key);
}

void judge_empty_rows_as_zeros(OracleResult& o) {
  const std::size_t rows = o.entropy.size(), cols = rows ? o.exact.size() / rows : 0;
  for (std::size_t r = 0; r < rows; ++r) {
    // mark_padding_row's signature: an empty row that exists has lse -inf, or
    // its sink s with a finite bound, or a sink too large for the domain (s != 0).
    const bool padding = o.lse_exact[r] == 0 && std::isinf(o.lse_bound[r]);
    if (!std::isnan(o.entropy[r]) || padding) continue;
    for (std::size_t c = 0; c < cols; ++c) o.bound[r * cols + c] = 0;
    if (o.lse_exact[r] == -kInf) o.lse_bound[r] = 0;
  }
}

bool in_finite_domain(const Problem& p) {
  for (int64_t bh = 0; bh < p.shape.batch * p.shape.heads; ++bh)
    for (int64_t i = 0; i < p.shape.q_len; ++i)
      if (!row_in_finite_domain(p, bh, i)) return false;
  return true;
}

namespace {

OracleResult evaluate(const Problem& p) {
  OracleResult o = oracle_detail::sized_result(p.shape);
  const Shape& sh = p.shape;
  const int64_t heads = sh.batch * sh.heads;
  const bool f64 = compute_dtype(p.dtype) == DType::f64;
  const int64_t chunks = (sh.q_len + kRowChunk - 1) / kRowChunk;
  // f64 problems get the double-word path, the others the double path (oracle_paths.h).
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

}  // namespace

OracleResult oracle(const Problem& p) {
  std::optional<std::string> key = oracle_detail::memo_key(p);
  if (!key) return evaluate(p);
  if (std::optional<OracleResult> kept = oracle_detail::memo_find(*key)) return std::move(*kept);
  OracleResult o = evaluate(p);
  oracle_detail::memo_keep(std::move(*key), o);
  return o;
}

Comparison compare_to_oracle(const Problem& p, const OracleResult& o, const std::vector<double>& out) {
  Comparison c;
  // Where the allowed interval [exact - bound, exact + bound] reaches past the
  // dtype's overflow threshold (its largest value plus half an ulp), rounding
  // to the dtype may give inf: an inf of that sign counts as the largest value.
  // (Outputs are convex combinations of the values, but 16-bit normalised
  // weights may sum to a little more than 1: values at 65504 give inf.)
  const double top = max_finite(p.dtype), u = unit_roundoff(p.dtype);
  const double overflow = top + u * top / (2 - 2 * u);
  for (std::size_t k = 0; k < out.size() && k < o.exact.size(); ++k) {
    if (std::isinf(o.bound[k])) continue;  // outside the representable domain: not judged
    ++c.judged;
    double got = out[k];
    if (std::isinf(got) && std::abs(o.exact[k]) + o.bound[k] >= overflow && (got > 0) == (o.exact[k] > 0))
      got = std::copysign(top, got);
    const double err = std::abs(got - o.exact[k]);
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

namespace attncheck {

Comparison compare_lse_to_oracle(const Problem& p, const OracleResult& o, const std::vector<double>& lse) {
  Comparison c;
  // The lse is a float in every dtype. Where the allowed interval
  // [exact - bound, exact + bound] reaches past float's overflow threshold on
  // one side (f64 rows whose logits cancel from terms near 1e308: a bound of
  // 1e293 around an lse of 0.2), a correct implementation's store to float may
  // give the inf of that side: it counts as float's largest value of that sign.
  // Not with a soft-cap: every logit is then c tanh(.) plus bias and ALiBi,
  // whatever its score's error, and the interval is that wide only because
  // the bound passes the score's error through tanh (docs/tolerance.md).
  const bool may_overflow = p.softcap == 0;
  const double top = max_finite(DType::f32), u = unit_roundoff(DType::f32);
  const double overflow = top + u * top / (2 - 2 * u);
  for (std::size_t r = 0; r < lse.size() && r < o.lse_exact.size(); ++r) {
    if (std::isinf(o.lse_bound[r])) continue;
    ++c.judged;
    double ratio;
    if (std::isinf(o.lse_exact[r])) ratio = lse[r] == o.lse_exact[r] ? 0 : kInf;  // -inf: met exactly
    else {
      double got = lse[r];
      if (std::isinf(got) && may_overflow && (got > 0 ? o.lse_exact[r] + o.lse_bound[r] >= overflow
                                      : o.lse_exact[r] - o.lse_bound[r] <= -overflow))
        got = std::copysign(top, got);
      const double err = std::abs(got - o.lse_exact[r]);
      if (std::isnan(err)) ratio = kInf;
      else if (o.lse_bound[r] > 0) ratio = err / o.lse_bound[r];
      else ratio = err > 0 ? kInf : 0;
    }
    if (ratio > 1) { c.ok = false; ++c.violations; }
    if (ratio > c.worst_ratio || c.worst_index < 0) { c.worst_ratio = ratio; c.worst_index = static_cast<int64_t>(r); }
  }
  return c;
}

}  // namespace attncheck
