#include "oracle/grad_rounding.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "oracle/bound_arithmetic.h"
#include "oracle/grad_row_terms.h"
#include "oracle/oracle.h"
#include "problem/transforms.h"

namespace attncheck {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The error (nats) of the logit a correct implementation computes for visible
// key j of row (bh, i), exact logit z: the dot product's rounding, then the
// soft-cap's, the bias's and ALiBi's additions, 16-bit storage of the logit.
// `pre` receives the pre-cap score's error (the soft-cap derivative's input).
double logit_error(const Problem& p, int64_t bh, int64_t i, int64_t j, double z, double& pre) {
  const Shape& s = p.shape;
  const double uc = unit_roundoff(compute_dtype(p.dtype)), u = unit_roundoff(p.dtype);
  const bool narrow = info(p.dtype).is_16bit();
  double abs_dot = 0;
  for (int64_t d = 0; d < s.head_dim; ++d)
    abs_dot += std::abs(p.q[p.q_at(bh, i, d)] * p.k[p.k_at(p.kv_of(bh), j, d)]);
  const double scaled = std::abs(p.effective_scale()) * abs_dot;
  pre = (s.head_dim + 2) * uc * scaled + (narrow ? 2 * u * scaled : 0);
  double err = pre;
  if (p.softcap > 0) err += 2 * uc * p.softcap;
  if (p.has_bias()) err += uc * (std::abs(z) + std::abs(p.bias[p.bias_at(bh, i, j)]));
  if (!p.alibi_slopes.empty()) {
    const int64_t dg = p.diagonal(bh / s.heads, i);
    err += 2 * uc * std::abs(p.slope_of(bh) * static_cast<double>(dg > j ? dg - j : j - dg)) +
           uc * std::abs(z);
  }
  if (narrow) err += u * std::abs(z);  // the logit stored in 16 bits
  return err;
}

}  // namespace

GradMagnitudes grad_magnitudes(const Problem& p, const std::vector<double>& out) {
  const Shape& s = p.shape;
  const int64_t rows = s.rows();
  const DType c = compute_dtype(p.dtype);
  const double uc = unit_roundoff(c), u = unit_roundoff(p.dtype);
  const bool narrow = info(p.dtype).is_16bit();
  GradMagnitudes m;
  const double n = static_cast<double>(s.head_dim + s.value_dim + s.kv_len + s.heads * s.q_len + 8);
  m.gamma = n * uc / (1 - n * uc) + (narrow ? 6 * u : 0);
  m.tau = 4 * min_normal(c);
  m.floor_unit = n * min_subnormal(c);
  m.weights.assign(s.mask_size(), 0.0);
  m.lse.assign(rows, -kInf);
  m.judged.assign(rows, 0);
  m.seen.assign(rows, 0);
  m.rho_vary.assign(rows, 0.0);
  m.rho_uniform.assign(rows, 0.0);
  m.a.assign(rows, 0.0);
  m.b.assign(rows, 0.0);
  m.c.assign(rows, 0.0);
  m.in_domain.assign(rows, 1);
  const OracleResult fwd = oracle(p);
  // The backward's domain over every existing key of the head, hidden ones
  // included (a dense kernel forms S and dP = dO V^T for all of them and
  // multiplies the hidden ones by a zero weight: 0 * inf is NaN): dout finite,
  // the scores' and dP's partial sums below half the largest value of the
  // type they are computed (or stored, 16 bits) in.
  const double limit = (narrow ? max_finite(p.dtype) : max_finite(c)) / 2;
  const double sc_abs = std::max(1.0, std::abs(p.effective_scale()));
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < p.q_len_of(bh / s.heads); ++i) {
      const int64_t r = bh * s.q_len + i, kv = p.kv_of(bh);
      bool ok = true;
      for (int64_t ch = 0; ch < s.value_dim; ++ch) ok = ok && std::isfinite(p.dout[p.out_at(bh, i, ch)]);
      for (int64_t j = 0; j < p.kv_len_of(bh / s.heads) && ok; ++j) {
        double dp = 0, dot = 0;
        for (int64_t ch = 0; ch < s.value_dim; ++ch)
          dp += std::abs(p.dout[p.out_at(bh, i, ch)] * p.v[p.v_at(kv, j, ch)]);
        for (int64_t d = 0; d < s.head_dim; ++d) dot += std::abs(p.q[p.q_at(bh, i, d)] * p.k[p.k_at(kv, j, d)]);
        ok = dp < limit && sc_abs * dot < limit;
      }
      m.in_domain[r] = ok;
    }
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      const int64_t r = bh * s.q_len + i;
      if (!p.row_exists(bh, i) || !p.row_sees_any_key(bh, i)) continue;
      m.seen[r] = 1;
      const std::vector<long double> z = row_logits(p, bh, i);
      long double top = p.sink_of(bh);
      for (long double x : z) top = std::max(top, x);
      long double sum = std::isinf(p.sink_of(bh)) ? 0.0L : std::exp(static_cast<long double>(p.sink_of(bh)) - top);
      for (long double x : z)
        if (!std::isinf(x)) sum += std::exp(x - top);
      const long double lse = top + std::log(sum);
      m.lse[r] = static_cast<double>(lse);
      double vary = 0;
      for (int64_t j = 0; j < s.kv_len; ++j) {
        if (std::isinf(z[j])) continue;
        m.weights[r * s.kv_len + j] = static_cast<double>(std::exp(z[j] - lse));
        double pre = 0;
        double e = logit_error(p, bh, i, j, static_cast<double>(z[j]), pre);
        if (p.softcap > 0) e += 2 * pre / p.softcap;
        vary = std::max(vary, e);
      }
      m.rho_vary[r] = vary + 4 * uc + (narrow ? u : 0);  // exp's rounding; P stored in 16 bits
      // The lse a backward may recompute P from: the forward's, within its
      // bound, rounded to float (the ABI's lse is float).
      m.rho_uniform[r] = fwd.lse_bound[r] + unit_roundoff(DType::f32) * (std::abs(m.lse[r]) + 1);
      double b = 0, cc = 0;
      bool finite = std::isfinite(m.rho_uniform[r]);
      for (int64_t ch = 0; ch < s.value_dim; ++ch) {
        const double g = std::abs(p.dout[p.out_at(bh, i, ch)]);
        b += g * std::abs(out[p.out_at(bh, i, ch)]);
        const double bound = fwd.bound[p.out_at(bh, i, ch)];
        if (!std::isfinite(bound) || !std::isfinite(g)) finite = false;
        else cc += g * bound;
      }
      double a = 0, largest = b;
      for (int64_t j = 0; j < s.kv_len; ++j) {
        if (std::isinf(z[j])) continue;
        double aij = 0;
        for (int64_t ch = 0; ch < s.value_dim; ++ch)
          aij += std::abs(p.dout[p.out_at(bh, i, ch)] * p.v[p.v_at(p.kv_of(bh), j, ch)]);
        a += (m.weights[r * s.kv_len + j] + m.tau) * aij;
        largest = std::max(largest, aij);
      }
      m.a[r] = a;
      m.b[r] = b;
      m.c[r] = cc;
      // D's partial sums (B_i) below the limit too; and the lse within float's
      // range (a backward may recompute P from the ABI's float lse: beyond it,
      // exp(z - lse) is exp(+-inf)).
      // And the weights' error below a nat, so that exp(z - lse) is within a
      // factor e of the weight (the float lse of logits near 1e8 is not).
      const bool lse_fits = std::abs(m.lse[r]) < max_finite(DType::f32) / 2 && m.rho_vary[r] + m.rho_uniform[r] < 1;
      m.judged[r] = finite && std::isfinite(a) && largest < limit && lse_fits && m.in_domain[r] && fwd.row_in_domain[r];
    }
  return m;
}

double weights_relative_error(const GradMagnitudes& m, int64_t row, bool uniform_part) {
  return std::expm1(m.rho_vary[row] + (uniform_part ? m.rho_uniform[row] : 0.0)) + m.gamma;
}

GradBounds grad_rounding_bounds(const Problem& p, const GradMagnitudes& m, const Outcome& o, GradErrorModel model) {
  const Shape& s = p.shape;
  const double u = unit_roundoff(p.dtype), sc = std::abs(p.effective_scale());
  const double F = kBoundSafetyFactor;
  const double out_floor = min_subnormal(p.dtype);
  GradBounds g;
  g.dq.assign(s.q_size(), 0.0);
  g.dk.assign(s.k_size(), 0.0);
  g.dv.assign(s.v_size(), 0.0);
  std::vector<uint8_t> key_unjudged(static_cast<std::size_t>(s.batch * s.kv_head_count() * s.kv_len), 0);
  // Sums of the absolute values of each gradient's terms: where one reaches
  // half the dtype's largest value (or the compute type's), a correct
  // backward may overflow, so the element is outside the domain (not judged).
  std::vector<double> mag_q(g.dq.size(), 0.0), mag_k(g.dk.size(), 0.0), mag_v(g.dv.size(), 0.0);
  const double limit = std::min(max_finite(p.dtype), max_finite(compute_dtype(p.dtype))) / 2;
  // Factors a correct backward may multiply by the scale before their product
  // with K or Q (grad_row_terms.h, ScaledFactorFlush; the gradient oracle's
  // section 9): scale dS_ij (autograd, naive), scale k_jd, scale q_id. One
  // such product may round to inf in the compute (or 16-bit) type: inf times
  // a zero k_jd is NaN where the exact gradient is 0, so the dq row (scale
  // dS_ij), the dk key (scale dS_ij), the dq column or dk column (scale k_jd,
  // scale q_id of any existing key or row of the kv head: a dense kernel
  // scales them all) is not judged. Below the normal range the scaled factor
  // keeps only an absolute accuracy (or is flushed), which the other factor
  // multiplies back: flush() of it joins the bound.
  const oracle_detail::Arithmetic dt = oracle_detail::arithmetic_of(p.dtype);
  const grad_detail::ScaledFactorFlush flush = grad_detail::scaled_factor_flush(dt, sc);
  const DType compute = compute_dtype(p.dtype);
  const double slack = 1 + 8 * dt.u;
  const double scaled_limit =
      std::min(max_finite(compute), compute != p.dtype ? max_finite(p.dtype) : kInf) / std::max(1.0, sc);
  const int64_t kv_heads = s.batch * s.kv_head_count();
  std::vector<uint8_t> k_over(static_cast<std::size_t>(kv_heads * s.head_dim), 0), q_over(k_over.size(), 0);
  std::vector<uint8_t> dk_over(key_unjudged.size(), 0);
  std::vector<long double> ck(g.dk.size(), 0.0L);  // what k_jd scaled first may lose, [kv head][Lk][D]
  for (int64_t kv = 0; kv < kv_heads; ++kv)
    for (int64_t j = 0; j < p.kv_len_of(kv / s.kv_head_count()); ++j)
      for (int64_t d = 0; d < s.head_dim; ++d) {
        const double kd = std::abs(p.k[p.k_at(kv, j, d)]);
        k_over[kv * s.head_dim + d] |= kd * slack >= scaled_limit;
        ck[p.k_at(kv, j, d)] = flush(kd, kd);
      }
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      if (!p.row_exists(bh, i)) continue;
      for (int64_t d = 0; d < s.head_dim; ++d)
        q_over[p.kv_of(bh) * s.head_dim + d] |= std::abs(p.q[p.q_at(bh, i, d)]) * slack >= scaled_limit;
    }
  // Accumulate the magnitude sums (before F), then add the gradients' own rounding.
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
    const int64_t kv = p.kv_of(bh);
    for (int64_t i = 0; i < s.q_len; ++i) {
      const int64_t r = bh * s.q_len + i;
      if (!p.row_exists(bh, i)) {
        for (int64_t d = 0; d < s.head_dim; ++d) g.dq[p.q_at(bh, i, d)] = kInf;
        continue;
      }
      if (!m.in_domain[r] || (m.seen[r] && !m.judged[r])) {
        // Outside the domain: its dq, and every dk/dv of the kv head it reads.
        for (int64_t d = 0; d < s.head_dim; ++d) g.dq[p.q_at(bh, i, d)] = kInf;
        for (int64_t j = 0; j < s.kv_len; ++j) key_unjudged[kv * s.kv_len + j] = 1;
        continue;
      }
      if (!m.seen[r]) continue;  // dq is exactly 0 there (grad_empty_rows_zero)
      const double rho = model.weights_error ? weights_relative_error(m, r) : 0.0;
      const double cterm = model.forward_error ? m.c[r] : 0.0;
      const double rho_full = weights_relative_error(m, r);
      std::vector<long double> cq(static_cast<std::size_t>(s.head_dim));  // what q_id scaled first may lose
      for (int64_t d = 0; d < s.head_dim; ++d) {
        const double qd = std::abs(p.q[p.q_at(bh, i, d)]);
        cq[d] = flush(qd, qd);
      }
      // D_i's size as the backward may form it: rowsum(dO * O), whose terms sum
      // to B_i, or rowsum(P * dP) (softmax's backward, as autograd and the
      // reference form it), whose terms sum to a_i = sum_j P'_ij A_ij >= B_i:
      // its rounding goes with the larger (the gradient oracle's d_error takes
      // the larger of the two forms too). With B_i alone, a reference bf16
      // backward whose dP_ij = -4.5e-13 vanished into two terms of +-64 beside
      // it was judged 50% off (fuzz_gradients, grad_linear_in_dout-b0159e4a6ae565e8).
      const double d_sum = std::max(m.b[r], m.a[r]);
      bool ds_over = false;
      for (int64_t j = 0; j < s.kv_len; ++j) {
        if (!p.visible(bh, i, j)) continue;
        const double w = m.weights[r * s.kv_len + j] + m.tau;
        double aij = 0;
        for (int64_t ch = 0; ch < s.value_dim; ++ch)
          aij += std::abs(p.dout[p.out_at(bh, i, ch)] * p.v[p.v_at(kv, j, ch)]);
        // |error of dS_ij|, before f; floor_unit: what underflow to subnormals
        // may take from dP, D and dS (then multiplied by |K| or |Q|, which may be huge).
        const double ds = w * ((m.gamma + 2 * rho) * (aij + d_sum) + cterm) + m.floor_unit;
        const double ds_size = w * (aij + d_sum);
        // |dS_ij| of any correct backward (the full error model, whatever the law's): what may overflow or flush when scaled.
        const double ds_hi = w * ((1 + m.gamma + 2 * rho_full) * (aij + d_sum) + m.c[r]) + m.floor_unit;
        const bool over = ds_hi * slack >= scaled_limit;
        ds_over |= over;
        dk_over[kv * s.kv_len + j] |= over;
        // In long double, as flush() is: scale ds may underflow double where
        // the factor it multiplies (up to 1e308) brings it back.
        const long double sds = static_cast<long double>(sc) * ds;
        const long double cs = flush(0.0, ds_hi);  // |dS_ij| may be anything up to ds_hi: 0 is its lower end
        for (int64_t d = 0; d < s.head_dim; ++d) {
          const double kd = std::abs(p.k[p.k_at(kv, j, d)]), qd = std::abs(p.q[p.q_at(bh, i, d)]);
          g.dq[p.q_at(bh, i, d)] += static_cast<double>((sds + cs) * kd + ds_hi * ck[p.k_at(kv, j, d)]);
          g.dk[p.k_at(kv, j, d)] += static_cast<double>((sds + cs) * qd + ds_hi * cq[d]);
          // max(1, scale): dS K may be summed before the scale multiplies it (scale 0: 0 * inf).
          mag_q[p.q_at(bh, i, d)] += std::max(1.0, sc) * ds_size * kd;
          mag_k[p.k_at(kv, j, d)] += std::max(1.0, sc) * ds_size * qd;
        }
        for (int64_t ch = 0; ch < s.value_dim; ++ch) {
          const double g_ = std::abs(p.dout[p.out_at(bh, i, ch)]);
          g.dv[p.v_at(kv, j, ch)] += w * (m.gamma + rho) * g_ + m.floor_unit;
          mag_v[p.v_at(kv, j, ch)] += w * g_;
        }
      }
      for (int64_t d = 0; d < s.head_dim; ++d)
        if (ds_over || k_over[kv * s.head_dim + d]) g.dq[p.q_at(bh, i, d)] = kInf;
    }
  }
  auto finish = [&](std::vector<double>& bound, const std::vector<double>& got) {
    for (std::size_t k = 0; k < bound.size(); ++k) {
      if (std::isinf(bound[k])) continue;
      // A NaN or infinite gradient adds nothing: the element stays judged (and wrong).
      const double x = k < got.size() && std::isfinite(got[k]) ? got[k] : 0.0;
      bound[k] = F * bound[k] + u * std::abs(x) + F * m.floor_unit * (1 + sc) + out_floor;
    }
  };
  for (int64_t kv = 0; kv < s.batch * s.kv_head_count(); ++kv)
    for (int64_t j = 0; j < s.kv_len; ++j) {
      const bool padding = j >= p.kv_len_of(kv / s.kv_head_count());
      for (int64_t d = 0; d < s.head_dim; ++d)
        if (dk_over[kv * s.kv_len + j] || q_over[kv * s.head_dim + d]) g.dk[p.k_at(kv, j, d)] = kInf;
      if (!padding && !key_unjudged[kv * s.kv_len + j]) continue;
      for (int64_t d = 0; d < s.head_dim; ++d) g.dk[p.k_at(kv, j, d)] = kInf;
      for (int64_t ch = 0; ch < s.value_dim; ++ch) g.dv[p.v_at(kv, j, ch)] = kInf;
    }
  auto outside = [limit](std::vector<double>& bound, const std::vector<double>& mag) {
    for (std::size_t k = 0; k < bound.size(); ++k)
      if (!(mag[k] < limit)) bound[k] = kInf;
  };
  outside(g.dq, mag_q);
  outside(g.dk, mag_k);
  outside(g.dv, mag_v);
  finish(g.dq, o.dq);
  finish(g.dk, o.dk);
  finish(g.dv, o.dv);
  return g;
}

}  // namespace attncheck
