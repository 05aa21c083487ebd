// The gradient oracle's pass over one kv head (grad_paths.h): the exact
// gradients in H and the bound of docs/tolerance.md ("Gradients") in double.
//
// Per query row i of a head of the group (n visible keys j, value_dim Dv):
//   z_j  the logits (soft-cap, bias, ALiBi: logit_chain.h), p_j their weights
//        (the sink in the denominator)
//   dP_j = sum_c dO_ic v_jc,  D = sum_j p_j dP_j  (= sum_c dO_ic o_ic)
//   dS_j = p_j (dP_j - D) * t_j   (t_j the soft-cap's derivative, else 1)
//   dq_i = scale sum_j dS_j k_j;  dk_j += scale dS_j q_i;  dv_j += p_j dO_i
// Rows go one at a time; every product is an axpy over contiguous memory
// (K and V transposed for the row's dot products), so the compiler
// vectorises the double ones. Nothing of size q_len x kv_len is held.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "oracle/bound_arithmetic.h"
#include "oracle/grad_paths.h"
#include "oracle/grad_row_terms.h"
#include "oracle/logit_chain.h"

namespace attncheck::grad_detail {

namespace {

using oracle_detail::kInf;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// What happens to a query row of the group.
enum class RowKind : uint8_t {
  padding,  // i >= q_lens[b]: never read, not judged
  empty,    // sees no key: dq is 0 by the ABI, judged by a law
  outside,  // outside the representable domain: not judged, and every key of the kv head with it
  judged,
};

// The first threshold at which rounding to t may give inf: its largest value plus half an ulp.
double overflow_threshold(DType t) {
  const double top = max_finite(t), u = unit_roundoff(t);
  return top + u * top / (2 - 2 * u);
}

// One kv head's keys and values, as the row loops read them (Lk existing keys).
template <class H> struct KvHead {
  int64_t Lk = 0;
  std::vector<H> kt, k, vt, v;       // K^T [D][Lk], K [Lk][D], V^T [Dv][Lk], V [Lk][Dv]
  std::vector<double> akt, ak, avt;  // |K^T|, |K|, |V^T|
  std::vector<double> k_abs_sum, v_abs_sum;  // [Lk]: sum_d |k_jd|, sum_c |v_jc|
};

template <class H> KvHead<H> load_kv_head(const Problem& p, int64_t kv_bh, int64_t Lk) {
  const int64_t D = p.shape.head_dim, Dv = p.shape.value_dim;
  KvHead<H> h;
  h.Lk = Lk;
  h.kt.assign(D * Lk, 0);
  h.k.assign(Lk * D, 0);
  h.vt.assign(Dv * Lk, 0);
  h.v.assign(Lk * Dv, 0);
  h.akt.assign(D * Lk, 0.0);
  h.ak.assign(Lk * D, 0.0);
  h.avt.assign(Dv * Lk, 0.0);
  h.k_abs_sum.assign(Lk, 0.0);
  h.v_abs_sum.assign(Lk, 0.0);
  for (int64_t j = 0; j < Lk; ++j) {
    for (int64_t d = 0; d < D; ++d) {
      const double x = p.k[p.k_at(kv_bh, j, d)];
      h.kt[d * Lk + j] = h.k[j * D + d] = static_cast<H>(x);
      h.akt[d * Lk + j] = h.ak[j * D + d] = std::abs(x);
      h.k_abs_sum[j] += std::abs(x);
    }
    for (int64_t c = 0; c < Dv; ++c) {
      const double x = p.v[p.v_at(kv_bh, j, c)];
      h.vt[c * Lk + j] = h.v[j * Dv + c] = static_cast<H>(x);
      h.avt[c * Lk + j] = std::abs(x);
      h.v_abs_sum[j] += std::abs(x);
    }
  }
  return h;
}

// sum_t x_t y_t, two accumulators (the x87 path).
template <class H> H dot(const H* x, const H* y, int64_t n) {
  H acc0 = 0, acc1 = 0;
  int64_t t = 0;
  for (; t + 1 < n; t += 2) {
    acc0 += x[t] * y[t];
    acc1 += x[t + 1] * y[t + 1];
  }
  if (t < n) acc0 += x[t] * y[t];
  return acc0 + acc1;
}

bool finite_row(const double* x, int64_t n) {
  for (int64_t t = 0; t < n; ++t)
    if (!std::isfinite(x[t])) return false;
  return true;
}

}  // namespace

template <class H> void grad_kv_head(const Problem& p, int64_t kv_bh, GradOracleResult& g) {
  // x87 long double: the row's products as dot products, accumulators in
  // registers (storing a long double is slow); double: axpys, which vectorise.
  constexpr bool kX87 = std::is_same_v<H, long double>;
  const Shape& sh = p.shape;
  const int64_t KVH = sh.kv_head_count(), G = sh.heads / KVH;
  const int64_t b = kv_bh / KVH, kvh = kv_bh % KVH;
  const int64_t D = sh.head_dim, Dv = sh.value_dim;
  const int64_t Lk = std::min<int64_t>(sh.kv_len, p.kv_len_of(b));
  const int64_t Lq = std::min<int64_t>(sh.q_len, p.q_len_of(b));
  const Arithmetic dt = oracle_detail::arithmetic_of(p.dtype);
  const OracleResult& fwd = g.forward;
  // The oracle's own error is the same terms with its own u and no 16-bit
  // storage, float lse or flush, hence at most u_H / u of the
  // implementation's: the bound adds that fraction (docs/tolerance.md).
  const double uH = static_cast<double>(std::numeric_limits<H>::epsilon() / 2);
  const double factor = kBoundSafetyFactor + uH / dt.u;
  const double store = std::numeric_limits<double>::epsilon() / 2;  // the exact value rounded to double
  const H sigma = static_cast<H>(p.effective_scale());
  const double asig = std::abs(p.effective_scale());
  const double half_compute = max_finite(compute_dtype(p.dtype)) / 2;
  const double half_store = compute_dtype(p.dtype) != p.dtype ? max_finite(p.dtype) / 2 : kInf;
  const double overflow = overflow_threshold(p.dtype);
  const double slack = 1 + 8 * dt.u;
  const double gD3 = gamma(static_cast<double>(D) + 3, dt.u);
  const bool float_lse = p.lse_requested;
  const bool sixteen = dt.u16 > 0;

  // Padding keys: never read, not judged.
  for (int64_t j = Lk; j < sh.kv_len; ++j) {
    for (int64_t d = 0; d < D; ++d) g.dk[p.k_at(kv_bh, j, d)] = 0, g.dk_bound[p.k_at(kv_bh, j, d)] = kInf;
    for (int64_t c = 0; c < Dv; ++c) g.dv[p.v_at(kv_bh, j, c)] = 0, g.dv_bound[p.v_at(kv_bh, j, c)] = kInf;
  }

  // Which rows are judged, and how many of them see each key (the length of dk's and dv's sums).
  std::vector<RowKind> kind(G * sh.q_len, RowKind::padding);
  std::vector<int64_t> seen_by(Lk, 0);
  bool any_outside = false;
  for (int64_t hh = 0; hh < G; ++hh) {
    const int64_t bh = b * sh.heads + kvh * G + hh;
    for (int64_t i = 0; i < Lq; ++i) {
      int64_t n = 0;
      for (int64_t j = 0; j < Lk; ++j) n += p.visible(bh, i, j);
      // A row that sees no key is still formed by a dense kernel and masked
      // afterwards: where its products are not representable, or its dout not
      // finite, it may put NaN into every key (0 * NaN) like a row outside the domain.
      RowKind k = RowKind::judged;
      if (!finite_row(&p.dout[p.out_at(bh, i, 0)], Dv)) k = RowKind::outside;
      else if (n == 0) k = row_representable(p, bh, i) ? RowKind::empty : RowKind::outside;
      else if (!fwd.row_in_domain[bh * sh.q_len + i]) k = RowKind::outside;
      kind[hh * sh.q_len + i] = k;
      any_outside |= k == RowKind::outside;
      if (k == RowKind::judged)
        for (int64_t j = 0; j < Lk; ++j) seen_by[j] += p.visible(bh, i, j);
    }
  }

  const KvHead<H> kv = load_kv_head<H>(p, kv_bh, Lk);
  // dk, dv: the exact sums (scale applied at the end) and the bound's sums.
  std::vector<H> dk(Lk * D, 0), dv(Lk * Dv, 0);
  std::vector<double> bk(Lk * D, 0.0), bv(Lk * Dv, 0.0);
  // A factor scaled before its product may fall below the smallest normal
  // (grad_row_terms.h, ScaledFactorFlush): ck what k_jd scaled first may lose
  // ([Lk][D]), fk dk's share of such losses ([Lk][D]).
  const ScaledFactorFlush scaled_flush = scaled_factor_flush(dt, asig);
  std::vector<long double> ck(Lk * D);
  std::vector<double> fk(Lk * D, 0.0);
  bool any_ck = false;
  for (int64_t t = 0; t < Lk * D; ++t) any_ck |= (ck[t] = scaled_flush(kv.ak[t], kv.ak[t])) > 0;
  // The same factors scaled first may also overflow (the scale above 1): an
  // element whose scaled factor may round to inf in the compute type (or in
  // the 16-bit format, where it may be stored) is not judged. One product, so
  // its largest value, not half of it as for partial sums (the sums after it
  // are the sums' magnitudes' test). k_over[d]: some existing key's k_jd (a
  // dense kernel pre-scales every key); dk_over[j]: scale dS_ij of some row
  // that sees key j.
  const double scaled_limit =
      std::min(max_finite(compute_dtype(p.dtype)), compute_dtype(p.dtype) != p.dtype ? max_finite(p.dtype) : kInf) /
      std::max(1.0, asig);
  std::vector<uint8_t> k_over(D, 0), dk_over(Lk, 0);
  for (int64_t j = 0; j < Lk; ++j)
    for (int64_t d = 0; d < D; ++d) k_over[d] |= kv.ak[j * D + d] * slack >= scaled_limit;
  // gamma of each key's sums over the rows that see it; with 16-bit storage
  // and a group, each query head's dk/dv may be stored before the group's sum.
  const double group16 = sixteen && G > 1 ? dt.u16 : 0.0;
  const double group16_floor = sixteen && G > 1 ? static_cast<double>(G) * dt.weight_step : 0.0;  // below normals
  std::vector<double> gk(Lk), gv(Lk);
  for (int64_t j = 0; j < Lk; ++j) {
    gk[j] = gamma(static_cast<double>(seen_by[j]) + 3, dt.u) + group16;
    gv[j] = gamma(static_cast<double>(seen_by[j]) + 1, dt.u) + group16;
  }

  std::vector<H> s(Lk), dp(Lk), dq(D), qh(D), gh(Dv);
  std::vector<double> a(Lk), adp(Lk), bq(D), fq(D);
  std::vector<long double> cq(D);
  std::vector<int64_t> keys;
  std::vector<H> z, w, pw, ds;
  std::vector<double> pd, e, dpw, ddp, dds, score_d, ds_abs;
  std::vector<oracle_detail::LogitChain<H>> chain;

  for (int64_t hh = 0; hh < G; ++hh) {
    const int64_t bh = b * sh.heads + kvh * G + hh;
    for (int64_t i = 0; i < sh.q_len; ++i) {
      const RowKind k = i < Lq ? kind[hh * sh.q_len + i] : RowKind::padding;
      const double dq_value = k == RowKind::outside ? kNaN : 0.0;
      if (k != RowKind::judged && k != RowKind::empty) {
        for (int64_t d = 0; d < D; ++d) g.dq[p.q_at(bh, i, d)] = dq_value, g.dq_bound[p.q_at(bh, i, d)] = kInf;
        continue;
      }
      const double* qr = &p.q[p.q_at(bh, i, 0)];
      const double* gr = &p.dout[p.out_at(bh, i, 0)];
      for (int64_t d = 0; d < D; ++d) qh[d] = static_cast<H>(qr[d]);
      for (int64_t c = 0; c < Dv; ++c) gh[c] = static_cast<H>(gr[c]);
      const double* orow = &fwd.exact[p.out_at(bh, i, 0)];
      const double* obound = &fwd.bound[p.out_at(bh, i, 0)];
      // The row's dot products with every existing key: q . k_j and sum_d |q_d k_jd|,
      // dO . v_j and sum_c |dO_c v_jc| (axpys over j).
      std::fill(s.begin(), s.end(), H(0));
      std::fill(a.begin(), a.end(), 0.0);
      double q_abs = 0;
      for (int64_t d = 0; d < D; ++d) {
        const H qd = static_cast<H>(qr[d]);
        const double aq = std::abs(qr[d]);
        q_abs += aq;
        const H* kt = kv.kt.data() + d * Lk;
        const double* akt = kv.akt.data() + d * Lk;
        if constexpr (!kX87) {
          for (int64_t j = 0; j < Lk; ++j) s[j] += qd * kt[j];
        }
        for (int64_t j = 0; j < Lk; ++j) a[j] += aq * akt[j];
      }
      if constexpr (kX87) {
        for (int64_t j = 0; j < Lk; ++j) s[j] = dot<H>(qh.data(), &kv.k[j * D], D);
      }
      std::fill(dp.begin(), dp.end(), H(0));
      std::fill(adp.begin(), adp.end(), 0.0);
      double g_abs = 0, go_abs = 0, o_abs = 0, via_o = 0;
      for (int64_t c = 0; c < Dv; ++c) {
        const H gc = static_cast<H>(gr[c]);
        const double ag = std::abs(gr[c]);
        g_abs += ag;
        go_abs += ag * std::abs(orow[c]);
        o_abs += std::abs(orow[c]);
        via_o += ag * obound[c] / kBoundSafetyFactor;  // out's error: the forward bound's own terms
        const H* vt = kv.vt.data() + c * Lk;
        const double* avt = kv.avt.data() + c * Lk;
        if constexpr (!kX87) {
          for (int64_t j = 0; j < Lk; ++j) dp[j] += gc * vt[j];
        }
        for (int64_t j = 0; j < Lk; ++j) adp[j] += ag * avt[j];
      }
      if constexpr (kX87) {
        for (int64_t j = 0; j < Lk; ++j) dp[j] = dot<H>(gh.data(), &kv.v[j * Dv], Dv);
      }
      // The backward's domain: dP_j and D (and so dS_j) for every existing key,
      // hidden ones too (dense kernels form them all), below half of the
      // compute type's largest value and, for 16-bit formats, of the format's.
      bool inside = true;
      const double dp_limit = std::min(half_compute, half_store);
      for (int64_t j = 0; j < Lk && inside; ++j) inside = (adp[j] + go_abs) * slack < dp_limit;
      if (!inside) any_outside = true;
      if (!inside || k == RowKind::empty) {  // an empty row: dq is 0 by the ABI, judged by a law
        for (int64_t d = 0; d < D; ++d)
          g.dq[p.q_at(bh, i, d)] = inside ? 0.0 : kNaN, g.dq_bound[p.q_at(bh, i, d)] = kInf;
        continue;
      }

      // The visible keys' logits and weights; the sink in the denominator.
      const oracle_detail::RowTransform tr = oracle_detail::row_transform(p, bh, i);
      keys.clear();
      for (int64_t j = 0; j < Lk; ++j)
        if (p.visible(bh, i, j)) keys.push_back(j);
      const int64_t n = static_cast<int64_t>(keys.size());
      const bool sink = !p.sinks.empty();
      z.resize(n);
      chain.resize(n);
      H m = sink ? static_cast<H>(p.sink_of(bh)) : -std::numeric_limits<H>::infinity();
      for (int64_t t = 0; t < n; ++t) {
        chain[t] = oracle_detail::logit_chain<H>(tr, keys[t], sigma * s[keys[t]]);
        z[t] = chain[t].z;
        m = std::max(m, z[t]);
      }
      w.resize(n);
      H total = sink ? std::exp(static_cast<H>(p.sink_of(bh)) - m) : H(0);
      const H w_sink = total;
      for (int64_t t = 0; t < n; ++t) total += (w[t] = std::exp(z[t] - m));
      pw.resize(n);
      pd.resize(n);
      for (int64_t t = 0; t < n; ++t) pd[t] = static_cast<double>(pw[t] = w[t] / total);
      const double p_sink = static_cast<double>(w_sink / total);
      const double md = static_cast<double>(m), log_total = static_cast<double>(std::log(total));
      const double lse = md + log_total;

      // Each key's logit error (the forward's e_j: the score, the max
      // subtraction, exp, 16-bit storage, flushes, the transforms), E, and
      // what normalising may cost every weight.
      e.resize(n);
      score_d.resize(n);
      double sum_pe = 0;
      for (int64_t t = 0; t < n; ++t) {
        const int64_t j = keys[t];
        const double zd = static_cast<double>(z[t]);
        const double ftz = asig * (q_abs + kv.k_abs_sum[j]) * dt.tiny;
        score_d[t] = static_cast<double>(chain[t].score);
        e[t] = oracle_detail::logit_error(dt, gD3, zd, zd - md, asig * a[j], ftz) +
               (tr.any() ? oracle_detail::transform_error(dt, tr, chain[t]) : 0.0);
        sum_pe += pd[t] * std::expm1(e[t]);
      }
      double e_sink = 0;
      if (sink) {
        const double sd = p.sink_of(bh);
        e_sink = oracle_detail::logit_error(dt, 0, sd, sd - md, 0, 0);
        sum_pe += p_sink * std::expm1(e_sink);
      }
      const double E = std::log1p(sum_pe);
      double l = lse_error(dt, E, static_cast<double>(n + (sink ? 1 : 0)), md, log_total, lse, float_lse);
      // 16-bit weights below the format's smallest normal (the forward's
      // section 8): an absolute d16_j per key, and sum_k d16_k of the sum.
      std::vector<double> d16(n, 0.0);
      if (dt.weight_floor > 0) {
        const double Ld = std::max(static_cast<double>(total), 1.0);  // the largest term is 1
        auto allowance = [&](double pr, double err) {
          const double lo = pr * std::exp(-(err + l)), hi = std::min(pr * std::exp(err + l), 1.0);
          double d = lo < dt.weight_floor ? dt.weight_step : 0.0;
          if (lo * Ld < dt.weight_floor) d = std::max(d, std::min(hi, dt.weight_floor / Ld));
          return d;
        };
        double sub16 = sink ? allowance(p_sink, e_sink) : 0.0;
        for (int64_t t = 0; t < n; ++t) sub16 += d16[t] = allowance(pd[t], e[t]);
        l += sub16;
      }

      // Weights, dP, D.
      dpw.resize(n);
      ddp.resize(n);
      H Dx = 0;
      double via_p = 0, p_dp_abs = 0;
      for (int64_t t = 0; t < n; ++t) {
        const int64_t j = keys[t];
        dpw[t] = weight_error(dt, pd[t], e[t], l, d16[t]);
        const double dpj = static_cast<double>(dp[j]);
        ddp[t] = dp_error(dt, static_cast<double>(Dv), dpj, adp[j], g_abs, kv.v_abs_sum[j]);
        Dx += pw[t] * dp[j];
        via_p += dpw[t] * std::abs(dpj) + pd[t] * ddp[t];
        p_dp_abs += pd[t] * std::abs(dpj);
      }
      const double Dd = static_cast<double>(Dx);
      via_p += gamma(static_cast<double>(n), dt.u) * p_dp_abs;
      via_o += gamma(static_cast<double>(Dv), dt.u) * go_abs + dt.tiny * (static_cast<double>(Dv) + g_abs + o_abs);
      const double dD = d_error(dt, via_o, via_p, Dd);

      // dS_j and its error, through the soft-cap's derivative.
      ds.resize(n);
      dds.resize(n);
      ds_abs.resize(n);
      const H cap = static_cast<H>(p.softcap);
      for (int64_t t = 0; t < n; ++t) {
        const int64_t j = keys[t];
        const H diff = dp[j] - Dx;
        const H dz = pw[t] * diff;
        const double dz_err = dz_error(dt, pd[t], dpw[t], std::abs(static_cast<double>(diff)), ddp[t], dD);
        SoftcapTerm sc{1.0, 0.0};
        H tder = 1;
        if (p.softcap > 0) {
          const H x = chain[t].score / cap;
          const H ch = std::cosh(x);
          tder = 1 / (ch * ch);  // sech^2, accurate where 1 - tanh^2 cancels
          const double score_err = gD3 * asig * a[j] + asig * (q_abs + kv.k_abs_sum[j]) * dt.tiny;
          sc = softcap_derivative_error(dt, p.softcap, score_d[t], score_err, static_cast<double>(std::tanh(x)),
                                        static_cast<double>(tder));
        }
        ds[t] = dz * tder;
        ds_abs[t] = std::abs(static_cast<double>(ds[t]));
        dds[t] = p.softcap > 0 ? ds_error(dt, dz_err, std::abs(static_cast<double>(dz)), sc) : dz_err;
      }

      // dq_i = scale sum_j dS_j k_j, and its bound's sum.
      std::fill(dq.begin(), dq.end(), H(0));
      std::fill(bq.begin(), bq.end(), 0.0);
      // The scaled-factor losses: dS_j scaled first (cs, times |k_jd| in dq and
      // |q_id| in dk), k_jd scaled first (ck, times dS_j's largest magnitude in
      // dq), q_id scaled first (cq, the same in dk).
      std::fill(fq.begin(), fq.end(), 0.0);
      bool any_cq = false;
      for (int64_t d = 0; d < D; ++d) any_cq |= (cq[d] = scaled_flush(std::abs(qr[d]), std::abs(qr[d]))) > 0;
      const double gq = gamma(static_cast<double>(n) + 3, dt.u);
      for (int64_t t = 0; t < n; ++t) {
        const int64_t j = keys[t];
        const H dsj = ds[t];
        const double wq = dds[t] + gq * ds_abs[t];
        const H* kr = &kv.k[j * D];
        const double* akr = &kv.ak[j * D];
        if constexpr (!kX87) {
          for (int64_t d = 0; d < D; ++d) dq[d] += dsj * kr[d];
        }
        for (int64_t d = 0; d < D; ++d) bq[d] += wq * akr[d];
        const double ds_hi = ds_abs[t] + dds[t];
        const long double cs = scaled_flush(std::max(0.0, ds_abs[t] - dds[t]), ds_hi);
        if (cs > 0)
          for (int64_t d = 0; d < D; ++d) fq[d] += cs * akr[d];
        if (any_ck)
          for (int64_t d = 0; d < D; ++d) fq[d] += ds_hi * ck[j * D + d];
      }
      if constexpr (kX87) {  // dq_d = sum_j dS_j k_jd along K^T's rows
        for (int64_t d = 0; d < D; ++d) {
          const H* kt = kv.kt.data() + d * Lk;
          H acc0 = 0, acc1 = 0;
          int64_t t = 0;
          for (; t + 1 < n; t += 2) {
            acc0 += ds[t] * kt[keys[t]];
            acc1 += ds[t + 1] * kt[keys[t + 1]];
          }
          if (t < n) acc0 += ds[t] * kt[keys[t]];
          dq[d] = acc0 + acc1;
        }
      }
      const double flush_q = (static_cast<double>(n) + 2) * dt.tiny * std::max(1.0, asig);
      bool ds_over = false;  // scale dS_j of some key may overflow: every element of dq
      for (int64_t t = 0; t < n; ++t) ds_over |= (ds_abs[t] + dds[t]) * slack >= scaled_limit;
      for (int64_t d = 0; d < D; ++d) {
        const double exact = static_cast<double>(sigma * dq[d]);
        const double sums = asig * bq[d];
        const double B = sums + dt.u16 * std::abs(exact) + dt.out_floor + flush_q + fq[d];
        // Partial sums formed before or after the scale multiplies (a scale of 0 does not save dS K from overflowing).
        const bool representable = std::max(1.0, asig) * bq[d] / gq < half_compute && std::abs(exact) < overflow &&
                                   !ds_over && !k_over[d];
        g.dq[p.q_at(bh, i, d)] = exact;
        g.dq_bound[p.q_at(bh, i, d)] = representable ? factor * B + store * std::abs(exact) : kInf;
      }

      // Into the kv head's dk_j (dS_j q_i) and dv_j (p_j dO_i), and their bounds' sums.
      for (int64_t t = 0; t < n; ++t) {
        const int64_t j = keys[t];
        const H dsj = ds[t], pj = pw[t];
        const double wk = dds[t] + gk[j] * ds_abs[t];
        const double wv = dpw[t] + gv[j] * pd[t];
        H* dkr = &dk[j * D];
        double* bkr = &bk[j * D];
        for (int64_t d = 0; d < D; ++d) dkr[d] += dsj * static_cast<H>(qr[d]);
        for (int64_t d = 0; d < D; ++d) bkr[d] += wk * std::abs(qr[d]);
        const double ds_hi = ds_abs[t] + dds[t];
        const long double cs = scaled_flush(std::max(0.0, ds_abs[t] - dds[t]), ds_hi);
        dk_over[j] |= ds_hi * slack >= scaled_limit;
        double* fkr = &fk[j * D];
        if (cs > 0)
          for (int64_t d = 0; d < D; ++d) fkr[d] += cs * std::abs(qr[d]);
        if (any_cq)
          for (int64_t d = 0; d < D; ++d) fkr[d] += ds_hi * cq[d];
        H* dvr = &dv[j * Dv];
        double* bvr = &bv[j * Dv];
        for (int64_t c = 0; c < Dv; ++c) dvr[c] += pj * static_cast<H>(gr[c]);
        for (int64_t c = 0; c < Dv; ++c) bvr[c] += wv * std::abs(gr[c]);
      }
    }
  }

  // The kv head's dk and dv. A row outside the domain may have put NaN into
  // every key through 0 * NaN in a correct dense kernel: the whole kv head is then not judged.
  for (int64_t j = 0; j < Lk; ++j) {
    const double N = static_cast<double>(seen_by[j]);
    const bool judged = !any_outside && seen_by[j] > 0;
    const double flush = (N + 2) * dt.tiny;
    for (int64_t d = 0; d < D; ++d) {
      const int64_t at = p.k_at(kv_bh, j, d);
      if (!judged) {
        g.dk[at] = any_outside ? kNaN : 0.0;
        g.dk_bound[at] = kInf;
        continue;
      }
      const double exact = static_cast<double>(sigma * dk[j * D + d]);
      const double sums = asig * bk[j * D + d];
      const double B = sums + dt.u16 * std::abs(exact) + dt.out_floor + group16_floor + flush * std::max(1.0, asig) +
                       fk[j * D + d];
      const bool representable =
          std::max(1.0, asig) * bk[j * D + d] / gk[j] < half_compute && std::abs(exact) < overflow && !dk_over[j];
      g.dk[at] = exact;
      g.dk_bound[at] = representable ? factor * B + store * std::abs(exact) : kInf;
    }
    for (int64_t c = 0; c < Dv; ++c) {
      const int64_t at = p.v_at(kv_bh, j, c);
      if (!judged) {
        g.dv[at] = any_outside ? kNaN : 0.0;
        g.dv_bound[at] = kInf;
        continue;
      }
      const double exact = static_cast<double>(dv[j * Dv + c]);
      const double sums = bv[j * Dv + c];
      const double B = sums + dt.u16 * std::abs(exact) + dt.out_floor + group16_floor + flush;
      const bool representable = sums / gv[j] < half_compute && std::abs(exact) < overflow;
      g.dv[at] = exact;
      g.dv_bound[at] = representable ? factor * B + store * std::abs(exact) : kInf;
    }
  }
}

template void grad_kv_head<double>(const Problem&, int64_t, GradOracleResult&);
template void grad_kv_head<long double>(const Problem&, int64_t, GradOracleResult&);

}  // namespace attncheck::grad_detail
