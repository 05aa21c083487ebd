// The oracle's careful path: one query row, scalar, in H, with the weights'
// shifts evaluated exactly in log space (oracle_paths.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "oracle/bound_arithmetic.h"
#include "oracle/numerics_allowance.h"
#include "oracle/logit_chain.h"
#include "oracle/oracle_paths.h"

namespace attncheck::oracle_detail {

namespace {

// How far each weight may move when every logit j may be off by up to e_j.
// With perturbations |eps_j| <= e_j the perturbed weight is
//   p~_j = p_j exp(eps_j) / sum_k p_k exp(eps_k),
// and since exp(-e_bar) <= sum_k p_k exp(eps_k) <= exp(E), E = log sum_k p_k exp(e_k)
// (Jensen for the lower side, E >= e_bar), p~_j / p_j lies in [exp(-e_j - E), exp(e_j + E)].
// Evaluated in log space, so a weight that underflows (p_j = 0 in double) but
// could be lifted by a large logit error still counts; capped at what a weight
// can move at all. To first order this is p_j (e_j + e_bar): docs/tolerance.md.
// Returns E, which also bounds how far the log-sum-exp moves (docs/tolerance.md, "Version 2").
double weight_shifts(const std::vector<double>& log_p, const std::vector<double>& p, const std::vector<double>& e,
                     std::vector<double>& shift) {
  const std::size_t n = p.size();
  double top = -kInf;
  for (std::size_t t = 0; t < n; ++t) top = std::max(top, log_p[t] + e[t]);
  double acc = 0;
  for (std::size_t t = 0; t < n; ++t) acc += std::exp(log_p[t] + e[t] - top);
  const double E = top + std::log(acc);  // log sum_k p_k exp(e_k), >= 0
  shift.resize(n);
  for (std::size_t t = 0; t < n; ++t) {
    const double grow = e[t] + E;
    // p_j expm1(grow) is accurate for small grow; exp(log p_j + grow) covers p_j = 0 in double.
    const double raised = log_p[t] + grow >= 0 ? 1.0
                          : p[t] > 0           ? p[t] * std::expm1(grow)
                                               : std::exp(log_p[t] + grow);
    const double up = std::min(1 - p[t], raised);
    const double down = -p[t] * std::expm1(-grow);
    shift[t] = std::max(up, down);
  }
  return E;
}

}  // namespace

template <class H> void careful_row(const Problem& p, int64_t bh, int64_t i, OracleResult& o) {
  const Shape& sh = p.shape;
  const int64_t row = bh * sh.q_len + i;
  if (!p.row_exists(bh, i)) {  // padding: never read, never judged
    mark_padding_row(p, bh, i, o);
    return;
  }
  const H scale = static_cast<H>(p.effective_scale());
  const int64_t kv = p.kv_of(bh);
  const RowTransform tr = row_transform(p, bh, i);
  std::vector<int64_t> keys;
  for (int64_t j = 0; j < sh.kv_len; ++j)
    if (p.visible(bh, i, j)) keys.push_back(j);
  const int64_t n = static_cast<int64_t>(keys.size());
  // The sink joins the row as one more term of the denominator, with value 0
  // and an exact logit (no dot product): index n below.
  const bool sink = !p.sinks.empty();
  const int64_t terms = n + (sink ? 1 : 0);
  const bool in_domain = row_in_finite_domain(p, bh, i);
  o.row_in_domain[row] = in_domain;
  const Arithmetic dt = arithmetic_of(p), orc = oracle_arithmetic<H>();
  if (n == 0) {  // sees nothing: the ABI's zeros, judged by fully_masked_rows_zero alone
    for (int64_t c = 0; c < sh.value_dim; ++c) {
      o.exact[p.out_at(bh, i, c)] = 0;
      o.bound[p.out_at(bh, i, c)] = kInf;
    }
    o.entropy[row] = std::numeric_limits<double>::quiet_NaN();
    empty_row_lse(p, bh, i, orc, o);
    return;
  }
  std::vector<double> s(terms), a(terms, 0.0), pr(terms), ftz(terms, 0.0), x_dt(terms, 0.0), x_or(terms, 0.0);
  std::vector<H> sH(terms);
  H m = -std::numeric_limits<H>::infinity();
  for (int64_t t = 0; t < n; ++t) {
    const int64_t j = keys[t];
    H dot = 0, abs_dot = 0, abs_sum = 0;
    for (int64_t d = 0; d < sh.head_dim; ++d) {
      const H qd = p.q[p.q_at(bh, i, d)], kd = p.k[p.k_at(kv, j, d)];
      dot += qd * kd;
      abs_dot += std::abs(qd * kd);
      abs_sum += std::abs(qd) + std::abs(kd);
    }
    H st = scale * dot;
    if (tr.any()) {  // the v2 logit transforms, and what they cost (logit_chain.h)
      const LogitChain<H> ch = logit_chain<H>(tr, j, st);
      x_dt[t] = transform_error(dt, tr, ch);
      x_or[t] = transform_error(orc, tr, ch);
      st = ch.z;
    }
    sH[t] = st;
    s[t] = static_cast<double>(st);
    a[t] = static_cast<double>(std::abs(scale) * abs_dot);
    // Multiplied by tiny in H: |q| + |k| sums near the top of f64 would overflow a double.
    ftz[t] = static_cast<double>(std::abs(scale) * abs_sum * static_cast<H>(dt.tiny));
    m = std::max(m, st);
  }
  if (sink) {
    sH[n] = static_cast<H>(p.sink_of(bh));
    s[n] = p.sink_of(bh);
    m = std::max(m, sH[n]);
  }
  H total = 0;
  std::vector<H> w(terms);
  for (int64_t t = 0; t < terms; ++t) {
    w[t] = std::exp(sH[t] - m);
    total += w[t];
  }
  // The entropy of the keys' weights (the sink's share is no key's).
  double entropy = 0;
  for (int64_t t = 0; t < terms; ++t) {
    const H pt = w[t] / total;
    pr[t] = static_cast<double>(pt);
    if (pt > 0 && t < n) entropy -= static_cast<double>(pt * std::log(pt));
  }
  o.entropy[row] = entropy;

  const double md = static_cast<double>(m);
  const double g_dt = gamma(static_cast<double>(sh.head_dim) + 3, dt.u);
  const double g_or = gamma(static_cast<double>(sh.head_dim) + 3, orc.u);
  // log p_j in H: exact even where p_j itself underflows a double.
  std::vector<double> log_p(terms);
  const H log_total = std::log(total);
  for (int64_t t = 0; t < terms; ++t) log_p[t] = static_cast<double>(sH[t] - m - log_total);
  std::vector<double> e_dt(terms), e_or(terms), shift_dt(terms), shift_or(terms);
  // A declared numerics bit's allowance on every key's logit (numerics_allowance.h; the sink has no dot product).
  const double numerics = numerics_logit_allowance(p, bh, i, [&](int64_t j) { return p.visible(bh, i, j); });
  for (int64_t t = 0; t < terms; ++t) {
    e_dt[t] = logit_error(dt, g_dt, s[t], s[t] - md, a[t], ftz[t]) + x_dt[t] + (t < n ? numerics : 0.0);
    e_or[t] = logit_error(orc, g_or, s[t], s[t] - md, a[t], 0.0) + x_or[t];
  }
  const double E_dt = weight_shifts(log_p, pr, e_dt, shift_dt);
  const double E_or = weight_shifts(log_p, pr, e_or, shift_or);
  const double nn = static_cast<double>(terms);
  // Accumulating numerator and denominator, each term rescaled at most once
  // per key (streaming softmax), then one division; 16-bit weights in the
  // numerator and the 16-bit rounding of the output; the log-sum-exp
  // normalisation of split-KV merges (bound_arithmetic.h).
  const double acc_dt = accumulation_coefficient(dt, nn, md);
  const double acc_or = oracle_accumulation_coefficient(orc, nn);
  const double store = std::numeric_limits<double>::epsilon() / 2;  // exact rounded to double
  // Weights that may be stored below the 16-bit format's smallest normal
  // (docs/tolerance.md section 8). Two ways of storing them are correct:
  //  - the normalised weight p^_j, rounded to nearest: below the smallest
  //    normal it is off by at most half a subnormal step (gradual underflow);
  //  - the unnormalised w'_j = exp(s_j - m') against a running max m' <= m
  //    (FlashAttention), later rescaled by exp(m' - m) / L: below the smallest
  //    normal it is off by half a subnormal step, or by itself when flushed
  //    to zero, and after the rescaling by at most min(p_j, min_normal / L).
  //    w'_j >= w_j = p_j L, so this needs w_j below the smallest normal.
  // (Flushing normalised weights is not correct: a row of 2^14 + 1 equal
  // logits would come out zero.) d_j is the larger of the two allowances,
  // with p_j taken at its lowest (p_j - shift_j) to decide whether a weight
  // may be subnormal and at its highest (p_j + shift_j) for what it may lose;
  // 0 for keys whose weight stays normal (the relative terms cover those).
  std::vector<double> d16(terms, 0.0);
  bool any_below = false;
  double d16_sum = 0;
  if (dt.weight_floor > 0) {
    const double L = static_cast<double>(total);  // >= 1: the max key's w is 1
    for (int64_t t = 0; t < terms; ++t) {
      const double lo = pr[t] - shift_dt[t], hi = pr[t] + shift_dt[t];
      double d = 0;
      if (lo < dt.weight_floor) d = dt.weight_step;
      if (lo * L < dt.weight_floor) d = std::max(d, std::min(hi, dt.weight_floor / L));
      d16[t] = d;
      d16_sum += d;
      any_below |= d > 0;
    }
  }
  for (int64_t c = 0; c < sh.value_dim; ++c) {
    H out = 0;
    for (int64_t t = 0; t < n; ++t) out += w[t] * static_cast<H>(p.v[p.v_at(kv, keys[t], c)]);
    out /= total;
    const double outd = static_cast<double>(out);
    double sum_abs = 0, dev_dt = 0, dev_or = 0, vmax = 0, sub16 = 0;
    for (int64_t t = 0; t < terms; ++t) {
      const double vj = t < n ? p.v[p.v_at(kv, keys[t], c)] : 0.0;  // the sink's value is 0
      const double spread = std::abs(vj - outd);
      // Accumulation errors are relative to the weights actually used, which
      // may have moved by shift_dt.
      sum_abs += (pr[t] + shift_dt[t]) * std::abs(vj);
      dev_dt += shift_dt[t] * spread;
      dev_or += shift_or[t] * spread;
      vmax = std::max(vmax, std::abs(vj));
      // An absolute error d_j in a stored weight moves the output by d_j |v_jc|
      // when only P.V uses the stored weights, by d_j |v_jc - o_c| when the sum
      // is formed from them too.
      if (any_below) sub16 += d16[t] * std::max(std::abs(vj), spread);
    }
    const double underflow = (nn + 2) * dt.tiny * (1 + vmax + std::abs(outd)) + dt.out_floor + sub16;
    const double b_dt = kBoundSafetyFactor * (acc_dt * sum_abs + dev_dt + underflow);
    const double b_or = acc_or * sum_abs + dev_or + store * std::abs(outd);
    const int64_t at = p.out_at(bh, i, c);
    o.exact[at] = outd;
    o.bound[at] = in_domain ? b_dt + b_or : kInf;
  }
  const double lse = static_cast<double>(m + log_total);
  o.lse_exact[row] = lse;
  o.lse_bound[row] =
      in_domain ? lse_bound(dt, orc, E_dt, E_or, nn, md, static_cast<double>(log_total), lse, d16_sum) : kInf;
}

template void careful_row<double>(const Problem&, int64_t, int64_t, OracleResult&);
template void careful_row<long double>(const Problem&, int64_t, int64_t, OracleResult&);

}  // namespace attncheck::oracle_detail
