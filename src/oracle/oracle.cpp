#include "oracle/oracle.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attncheck {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// gamma(n) = n u / (1 - n u): the relative error bound of n roundings in a row.
double gamma(double n, double u) {
  const double nu = n * u;
  return nu < 1 ? nu / (1 - nu) : kInf;
}

// The arithmetic an implementation in this dtype is allowed. f16/bf16 are
// stored in 16 bits but, as the ABI's dtypes are used in practice, computed
// and accumulated in f32; logits and weights may be stored in 16 bits between
// steps, and the output is rounded to 16 bits.
struct Arithmetic {
  double u;            // unit roundoff of the computation
  double u16;          // unit roundoff of the 16-bit storage, 0 for f32/f64
  double tiny;         // smallest normal of the computation (underflow, flush-to-zero)
  double out_floor;    // smallest subnormal of the storage (output rounding near zero)
};

Arithmetic arithmetic_of(DType t) {
  const DType compute = compute_dtype(t);
  const bool stored_narrower = compute != t;  // 16-bit storage of f32 arithmetic
  return {unit_roundoff(compute), stored_narrower ? unit_roundoff(t) : 0.0, min_normal(compute), min_subnormal(t)};
}

// The oracle's own arithmetic, so its error is added to the bound too.
// (It neither flushes nor, inside the domain, underflows where it matters: tiny = 0.)
template <class H> Arithmetic oracle_arithmetic() {
  return {static_cast<double>(std::numeric_limits<H>::epsilon() / 2), 0.0, 0.0, 0.0};
}

struct RowScratch {
  std::vector<int64_t> keys;   // visible key indices
  std::vector<double> s, a, p;  // logit, sum_d |scale q_d k_d|, weight; per visible key
};

// Per-key logit error allowed in arithmetic `ar`, e_j in docs/tolerance.md:
//   dot product and scaling, the max subtraction, exp, 16-bit storage of
//   logits and weights, and subnormal inputs flushed to zero (`ftz` is
//   |scale| sum_d (|q_d| + |k_d|) times the arithmetic's smallest normal).
double logit_error(const Arithmetic& ar, int64_t head_dim, double s, double m, double a, double ftz) {
  return gamma(static_cast<double>(head_dim) + 3, ar.u) * a + ar.u * std::abs(s - m) + 2 * ar.u +
         (ar.u16 > 0 ? ar.u16 * (std::abs(s) + std::abs(s - m) + 1) : 0.0) + ftz;
}

// How far each weight may move when every logit j may be off by up to e_j.
// With perturbations |eps_j| <= e_j the perturbed weight is
//   p~_j = p_j exp(eps_j) / sum_k p_k exp(eps_k),
// and since exp(-e_bar) <= sum_k p_k exp(eps_k) <= exp(E), E = log sum_k p_k exp(e_k)
// (Jensen for the lower side, E >= e_bar), p~_j / p_j lies in [exp(-e_j - E), exp(e_j + E)].
// Evaluated in log space, so a weight that underflows (p_j = 0 in double) but
// could be lifted by a large logit error still counts; capped at what a weight
// can move at all. To first order this is p_j (e_j + e_bar): docs/tolerance.md.
void weight_shifts(const std::vector<double>& log_p, const std::vector<double>& p, const std::vector<double>& e,
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
}

template <class H>
void oracle_row(const Problem& p, int64_t bh, int64_t i, RowScratch& r, OracleResult& o) {
  const Shape& sh = p.shape;
  const int64_t row = bh * sh.q_len + i;
  const H scale = static_cast<H>(p.effective_scale());
  r.keys.clear();
  for (int64_t j = 0; j < sh.kv_len; ++j)
    if (p.visible(bh, i, j)) r.keys.push_back(j);
  const int64_t n = static_cast<int64_t>(r.keys.size());
  const bool in_domain = row_in_finite_domain(p, bh, i);
  o.row_in_domain[row] = in_domain;
  if (n == 0) {  // sees nothing: the ABI's zeros, judged by fully_masked_rows_zero alone
    for (int64_t c = 0; c < sh.value_dim; ++c) {
      o.exact[p.out_at(bh, i, c)] = 0;
      o.bound[p.out_at(bh, i, c)] = kInf;
    }
    o.entropy[row] = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  r.s.resize(n); r.a.resize(n); r.p.resize(n);
  std::vector<double> ftz(n);
  std::vector<H> sH(n);
  H m = -std::numeric_limits<H>::infinity();
  for (int64_t t = 0; t < n; ++t) {
    const int64_t j = r.keys[t];
    H dot = 0, abs_dot = 0, abs_sum = 0;
    for (int64_t d = 0; d < sh.head_dim; ++d) {
      const H qd = p.q[p.q_at(bh, i, d)], kd = p.k[p.k_at(bh, j, d)];
      dot += qd * kd;
      abs_dot += std::abs(qd * kd);
      abs_sum += std::abs(qd) + std::abs(kd);
    }
    const H s = scale * dot;
    sH[t] = s;
    r.s[t] = static_cast<double>(s);
    r.a[t] = static_cast<double>(std::abs(scale) * abs_dot);
    // Multiplied by tiny in H: |q| + |k| sums near the top of f64 would overflow a double.
    ftz[t] = static_cast<double>(std::abs(scale) * abs_sum * static_cast<H>(arithmetic_of(p.dtype).tiny));
    m = std::max(m, s);
  }
  H total = 0;
  std::vector<H> w(n);
  for (int64_t t = 0; t < n; ++t) {
    w[t] = std::exp(sH[t] - m);
    total += w[t];
  }
  double entropy = 0;
  for (int64_t t = 0; t < n; ++t) {
    const H pt = w[t] / total;
    r.p[t] = static_cast<double>(pt);
    if (pt > 0) entropy -= static_cast<double>(pt * std::log(pt));
  }
  o.entropy[row] = entropy;

  const Arithmetic dt = arithmetic_of(p.dtype), orc = oracle_arithmetic<H>();
  const double md = static_cast<double>(m);
  // log p_j in H: exact even where p_j itself underflows a double.
  std::vector<double> log_p(n);
  const H log_total = std::log(total);
  for (int64_t t = 0; t < n; ++t) log_p[t] = static_cast<double>(sH[t] - m - log_total);
  std::vector<double> e_dt(n), e_or(n), shift_dt(n), shift_or(n);
  for (int64_t t = 0; t < n; ++t) {
    e_dt[t] = logit_error(dt, sh.head_dim, r.s[t], md, r.a[t], ftz[t]);
    e_or[t] = logit_error(orc, sh.head_dim, r.s[t], md, r.a[t], 0.0);
  }
  weight_shifts(log_p, r.p, e_dt, shift_dt);
  weight_shifts(log_p, r.p, e_or, shift_or);
  const double nn = static_cast<double>(n);
  // Accumulating numerator and denominator, each term rescaled at most once
  // per key (streaming softmax), then one division; 16-bit weights in the
  // numerator and the 16-bit rounding of the output.
  // Normalising by a log-sum-exp (lse = m + log L, weights exp(s_j - lse), as
  // split-KV / flash-decoding merges do) rounds lse once: every weight is scaled
  // by exp(+-u |lse|), an error that does not cancel. Counted up to a relative
  // sqrt(u) (2.4e-4 in f32, 1.5e-8 in f64): past that, such an implementation
  // really is inaccurate at those logits, and the bound stays sharp.
  const double lse_dt = std::min(dt.u * (std::abs(md) + std::log(nn) + 2), std::sqrt(dt.u));
  const double acc_dt = 2 * gamma(2 * nn + 1, dt.u) + dt.u + 2 * dt.u16 + lse_dt;
  const double acc_or = 2 * gamma(2 * nn + 1, orc.u) + orc.u;  // the oracle divides by its sum: no lse
  const double store = std::numeric_limits<double>::epsilon() / 2;  // exact rounded to double
  for (int64_t c = 0; c < sh.value_dim; ++c) {
    H out = 0;
    for (int64_t t = 0; t < n; ++t) out += w[t] * static_cast<H>(p.v[p.v_at(bh, r.keys[t], c)]);
    out /= total;
    const double outd = static_cast<double>(out);
    double sum_abs = 0, dev_dt = 0, dev_or = 0, vmax = 0;
    for (int64_t t = 0; t < n; ++t) {
      const double vj = p.v[p.v_at(bh, r.keys[t], c)];
      const double spread = std::abs(vj - outd);
      // Accumulation errors are relative to the weights actually used, which
      // may have moved by shift_dt.
      sum_abs += (r.p[t] + shift_dt[t]) * std::abs(vj);
      dev_dt += shift_dt[t] * spread;
      dev_or += shift_or[t] * spread;
      vmax = std::max(vmax, std::abs(vj));
    }
    const double underflow = (nn + 2) * dt.tiny * (1 + vmax + std::abs(outd)) + dt.out_floor;
    const double b_dt = kBoundSafetyFactor * (acc_dt * sum_abs + dev_dt + underflow);
    const double b_or = acc_or * sum_abs + dev_or + store * std::abs(outd);
    const int64_t at = p.out_at(bh, i, c);
    o.exact[at] = outd;
    o.bound[at] = in_domain ? b_dt + b_or : kInf;
  }
}

}  // namespace

bool row_in_finite_domain(const Problem& p, int64_t bh, int64_t i) {
  const Shape& sh = p.shape;
  const double half_max = max_finite(p.dtype) / 2;
  const double scale = std::abs(p.effective_scale());
  if (!std::isfinite(scale)) return false;
  for (int64_t d = 0; d < sh.head_dim; ++d)  // finite, and finite once pre-scaled
    if (!(std::abs(scale * p.q[p.q_at(bh, i, d)]) < half_max)) return false;
  // Every key counts, hidden ones too: implementations form all logits and mask
  // afterwards (adding -inf to an overflowed logit gives NaN), and multiply
  // hidden values by a zero weight (0 * inf = NaN). The sums are the ones the
  // exact computation could form, so all of them must stay representable.
  std::vector<double> col_sum(sh.value_dim, 0.0);
  bool sees_any = false;
  for (int64_t j = 0; j < sh.kv_len; ++j) {
    sees_any |= p.visible(bh, i, j);
    double raw = 0;
    for (int64_t d = 0; d < sh.head_dim; ++d) {
      const double kd = p.k[p.k_at(bh, j, d)];
      if (!std::isfinite(kd)) return false;
      raw += std::abs(p.q[p.q_at(bh, i, d)] * kd);
    }
    // An implementation may form q.k before scaling: the unscaled sum must stay representable too.
    if (!(scale * raw < half_max) || !(raw < half_max)) return false;
    for (int64_t c = 0; c < sh.value_dim; ++c) {
      const double vj = p.v[p.v_at(bh, j, c)];
      if (!std::isfinite(vj)) return false;
      col_sum[c] += std::abs(vj);
    }
  }
  for (double s : col_sum)
    if (!(s < half_max)) return false;
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
  RowScratch scratch;
  for (int64_t bh = 0; bh < sh.batch * sh.heads; ++bh)
    for (int64_t i = 0; i < sh.q_len; ++i) {
      if (compute_dtype(p.dtype) == DType::f64) oracle_row<long double>(p, bh, i, scratch, o);
      else oracle_row<double>(p, bh, i, scratch, o);
    }
  return o;
}

Comparison compare_to_oracle(const Problem& p, const OracleResult& o, const std::vector<double>& out) {
  Comparison c;
  (void)p;
  for (std::size_t k = 0; k < out.size() && k < o.exact.size(); ++k) {
    if (std::isinf(o.bound[k])) continue;  // outside the representable domain: not judged
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
