// The blocked, vectorised evaluation of one head's rows (oracle_paths.h),
// shared by the oracle's double path (fast_rows.cpp: f32, f16, bf16 problems)
// and its double-word path (fast_rows_f64.cpp: f64 problems). They differ only
// in how the exact value is computed (the logits, the weights, their sum and
// P.V: in double, or in double-word) and in the oracle's own error terms; the
// bound's quantities (weights p_j, shifts, sum_j (p_j + shift_j) |v_jc|,
// deviation sums, a_j) are first-order estimates, computed by the same code on
// both paths: the per-key loops in double (fast_kernels.h), the sums over d and
// over V in float lifted to upper bounds on the double path
// (fast_bound_float.h), in double on the f64 path.
//
// For one head (K [kv_len][head_dim], V [kv_len][value_dim]) its keys are
// first transposed into Kt [n16 / kTile][head_dim][kTile] (in float alone when
// every key is a float, else in double with |K|t in float), n16 =
// kv_len rounded up to a whole tile of kTile keys, each tile contiguous (rows
// of a plain [head_dim][n16] transpose would be n16 doubles apart, a power of
// two often enough that a tile's rows fight over one L1 set). Query rows then go in blocks of kRows: the
// logits of a block against the keys are a small matrix product
// (dot [kRows][n16] = Q_blk Kt, abs [kRows][n16] = |Q_blk| |K|t), the weights
// and their error shifts are vector loops over the keys, and the output and
// the bound's sums are blocked products over V: nothing of size q_len x kv_len
// is held, only a tile of kRows rows against the keys.
//
// The shifts (careful_row's weight_shifts) have simple upper bounds when every
// logit error e_j <= 1/2. For 0 <= g < 3 the series of expm1 is dominated by a
// geometric one, expm1(g) <= up(g) = g + g^2 / (2 (1 - g / 3)); and
// 1 - exp(-g) <= dn(g) = g - g^2 / 2 + g^3 / 6 (an alternating series). So E = log sum_k p_k exp(e_k) <= log1p(sum_k p_k up(e_k))
// (sum_k p_k = 1), grow_j = e_j + E <= 1.0, and
//   shift_j <= max(min(1 - p_j, p_j up(g)), p_j dn(g)),  g = e_j + E,
// at most 4% above the exact shifts (at g = 1), 0.1% at g = 0.01.
// They exceed the exact shifts only at second order (docs/tolerance.md). Rows
// with a larger error, a non-finite input or near the representable domain's
// edge go to the path's careful_row.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "oracle/bound_arithmetic.h"
#include "oracle/fast_bound_float.h"
#include "oracle/fast_kernels.h"
#include "oracle/logit_chain.h"
#include "oracle/numerics_allowance.h"
#include "oracle/oracle_paths.h"
#include "parallel/parallel_for.h"

namespace attncheck::oracle_detail {

// What every row of a head shares: the keys transposed and padded, the sums
// the domain test and the flush-to-zero term need.
struct HeadKeys {
  int64_t n = 0, n16 = 0, D = 0;
  // K^T by tiles of keys, [n16 / kTile][D][kTile], zero past kv_len: in float
  // alone (ktf) when float_keys, else in double (kt) with |K|^T rounded up to
  // floats (akt, float_bound only).
  bool float_keys = false;         // float_bound asked and every k of the head is a float (or NaN)
  std::vector<float> ktf;
  std::vector<double> kt;
  std::vector<float> akt;
  std::vector<double> k_abs_sum;   // [n16]: sum_d |k_jd|, 0 past kv_len
  std::vector<double> norm_tail;   // [kv_len + 1]: max over keys >= j of ||k_j||_2 (0 at kv_len)
  int64_t dv_pad = 0;              // value_dim rounded up to whole kCols
  // V by slabs of kCols columns, [dv_pad / kCols][kv_len][kCols], zero columns
  // past value_dim: the V kernels stream one slab per pass, contiguous (rows
  // of [kv_len][dv_pad] would be dv_pad apart, a power of two that maps a
  // pass onto a sliver of L2's sets). In float alone (vf) when float_values,
  // else in double (v).
  std::vector<double> v;
  std::vector<float> vf;
  std::vector<float> vf_max;       // [dv_pad / kCols][ceil(kv_len / kMaxChunk)][kCols]: column_max_kernel's maxima of each slab
  const double* v_slab(int64_t c0) const { return v.data() + c0 * n; }  // columns [c0, c0 + kCols): [kv_len][kCols]
  const float* vf_slab(int64_t c0) const { return vf.data() + c0 * n; }
  const float* vf_max_slab(int64_t c0) const { return vf_max.data() + c0 * ((n + kMaxChunk - 1) / kMaxChunk); }
  std::vector<double> v_max;       // the same for v, when not float_values (column_max_kernel_d's)
  const double* v_max_slab(int64_t c0) const { return v_max.data() + c0 * ((n + kMaxChunk - 1) / kMaxChunk); }
  bool float_values = false;       // float_bound asked and every v of the head is a float: the V sums in float
  bool inputs_finite = true;       // every k and v of the head is finite, and every sum_j |v_jc| is below C / 2
};
// float_bound: the double path's float sums (|K|^T and V in float); without it
// (the f64 path) akt and vf stay empty.
HeadKeys head_keys(const Problem& p, int64_t bh, bool float_bound);  // fast_rows.cpp

// The keys [begin, end) that lengths, the causal rule and the window leave to
// row i of head bh, before the mask and the bias: Problem::visible's rule as a
// range within [0, kv_lens[b]]; empty for a padding row.
struct KeyRange {
  int64_t begin = 0, end = 0;
};
inline KeyRange key_range(const Problem& p, int64_t bh, int64_t i) {
  const int64_t b = bh / p.shape.heads;
  const int64_t lk = std::min(p.shape.kv_len, p.kv_len_of(b));
  if (!p.row_exists(bh, i)) return {};
  const int64_t d = p.diagonal(b, i);
  int64_t end = lk;
  if (p.causal != Causal::none) end = std::min(end, d + 1);
  if (p.window_right >= 0 && p.window_right < lk - d) end = std::min(end, d + p.window_right + 1);
  const int64_t begin = p.window_left >= 0 && p.window_left < d ? std::min(d - p.window_left, lk) : 0;
  return {begin, std::clamp<int64_t>(end, begin, lk)};
}

// The fast domain test trusts its sums (formed in another order than
// row_in_finite_domain's) this far from a threshold; nearer, the exact test decides.
inline constexpr double kDomainMargin = 1 + 1e-6;

// Scratch of one block of kRows rows: [kRows][n16] each.
struct BlockScratch {
  std::vector<double> qb, aqb;                      // [kRows][D]
  std::vector<float> aqbf;                          // [kRows][D]: |q| rounded up to floats
  std::vector<double> dot, absd, x, w, pw, vis, d16;
  std::vector<double> devw, eor;                    // e_dt_j, then the deviation weights F sdt_j + sor_j; e_or_j
  std::vector<double> xdt, xor_;                    // the v2 transforms' logit errors (0 without them)
  std::vector<float> pwf, visf, devwf, d16f;        // pw, vis, devw, d16 rounded to floats (HeadKeys::float_values)
  void resize(int64_t D, int64_t n16) {
    qb.assign(kRows * D, 0.0);
    aqb.assign(kRows * D, 0.0);
    aqbf.assign(kRows * D, 0.0f);
    for (auto* a : {&dot, &absd, &x, &w, &pw, &vis, &d16, &devw, &eor, &xdt, &xor_}) a->assign(kRows * n16, 0.0);
    for (auto* a : {&pwf, &visf, &devwf, &d16f}) a->assign(kRows * n16, 0.0f);
  }
};

// The v2 logit transforms and the sink of one row, for Exact::weights
// (FastBlock::weights fills it). The sink is one more term of the
// denominator with value 0 and an exact logit (careful_row).
struct RowLogits {
  RowTransform tr;           // tr.any(): the chain (logit_chain.h) applies to the visible keys' scores
  bool sink = false;
  double s = 0;              // the sink's logit
  Arithmetic dt{};           // the implementation's arithmetic, for its transform errors
  double* x_dt = nullptr;    // [n16] out, with tr.any(): transform_error of each key in dt (0 if hidden)
  double* x_or = nullptr;    // [n16] out: the same in the oracle's arithmetic
  double w_sink = 0;         // out: exp(s - m) rounded to double; 0 without a sink
};

struct RowPlan {
  bool careful = false;  // handed to careful_row
  bool empty = false;    // sees no key
  double total = 1, m = 0, acc_dt = 0, acc_or = 0, n_vis = 0;
  double floor_or = 0;   // the oracle's absolute error per unit of (1 + max_j |v_jc| + |o_c|)
  bool any_below = false;
  double terms = 0;      // n_vis, plus one for the sink
  double sink_sdt = 0, sink_sor = 0, sink_d16 = 0;  // the sink's shifts and 16-bit allowance (value 0)
  double devw_sum = 0, d16_sum = 0;                 // sum_j devw_j, d16_j over the keys (upper bounds)
  bool range = false;    // sees exactly the keys [first, last): no mask or -inf bias hides one of them
  int64_t first = 0, last = 0;
};

// FastBlock<Exact> evaluates blocks of rows; Exact is the path's exact
// arithmetic, one per thread (FastBlock holds it), with:
//   Exact(const Problem&, const HeadKeys&, int64_t bh)
//   static constexpr bool kFloatBound: the bound's sums in float (HeadKeys);
//   void logits(BlockScratch&, int64_t tiles): the block's logits q.k_j in its
//       precision for the keys of tiles [0, tiles), rounded to double into dot,
//       and sum_d |q_d| |k_jd| (or an upper bound on it) into absd;
//   void weights(int64_t r, BlockScratch&, int64_t n8, RowLogits&, double& m, double& total):
//       row r's s_j, a_j into dot and absd (s_j the logit after the v2
//       transforms, whose errors go to RowLogits' x_dt, x_or), x_j = s_j - m
//       and w_j = exp(x_j) into x and w (w of hidden keys 0), rounded to
//       double, and m and sum_j w_j (with the sink's exp(s - m), into
//       RowLogits' w_sink) rounded to double;
//   void clear(int64_t r): row r contributes nothing to the block's sums;
//   static constexpr bool kValuesFromDouble: values takes sum_j w_j v_jc in double on entry;
//   void values(int64_t c0, const BlockScratch&, int64_t key_end, const RowPlan*, const double* sabs, double* out):
//       out [kRows][kCols], on entry sum_j w_j v_jc in double (values_kernel or values_float_kernel)
//       if kValuesFromDouble, on exit the block's outputs rounded to double;
//       sabs [kRows][kCols] the bound's sum_j p_j |v_jc| of these columns;
//   double values_error(int64_t r) const: an absolute error of row r's outputs
//       of the last values() the bound adds (the oracle's, beyond accumulation()'s);
//   LogitErrorTerms oracle_terms(int64_t r, double ascale) const (row r of the block),
//   double accumulation(double n) const,
//   double floor(double n) const: the oracle's own error terms (per-key logit
//       error, coefficient of sum_j p_j |v_jc|, absolute floor);
//   static void careful(const Problem&, int64_t bh, int64_t i, OracleResult&).
template <class Exact> class FastBlock {
 public:
  FastBlock(const Problem& p, const HeadKeys& h, int64_t bh, OracleResult& o)
      : p_(p), h_(h), bh_(bh), o_(o), exact_(p, h, bh), dt_(arithmetic_of(p)) {
    const Shape& sh = p.shape;
    scale_ = p.effective_scale();
    transforms_ = p.softcap > 0 || p.has_bias() || !p.alibi_slopes.empty();
    sinks_ = !p.sinks.empty();
    chain_limit_ = std::min(max_finite(compute_dtype(p.dtype)), compute_dtype(p.dtype) != p.dtype ? max_finite(p.dtype) : kInf) / 2;
    chain_slack_ = 1 + 8 * unit_roundoff(compute_dtype(p.dtype));
    // logit_error's (gamma(D + 3) + kv_logit) a_j, inlined by the kernels (fast_kernels.cpp).
    g_dt_ = gamma(static_cast<double>(sh.head_dim) + 3, dt_.u) + dt_.kv_logit;
    const DType compute = compute_dtype(p.dtype);
    half_compute_ = max_finite(compute) / 2;
    half_store_ = compute != p.dtype ? max_finite(p.dtype) / 2 : kInf;
    logit_rounding_ = gamma(static_cast<double>(sh.head_dim) + 3, unit_roundoff(compute));
  }

  void rows(int64_t i0, int64_t count, BlockScratch& b) {
    const Shape& sh = p_.shape;
    const int64_t D = sh.head_dim, n = h_.n;
    // The keys any row of the block may see: a prefix (causal rule, window, lengths).
    int64_t key_end = 0;
    for (int64_t r = 0; r < count; ++r) key_end = std::max(key_end, std::min(key_range(p_, bh_, i0 + r).end, n));
    const int64_t tiles = (key_end + kTile - 1) / kTile;
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t d = 0; d < D; ++d) {
        const double q = r < count ? p_.q[p_.q_at(bh_, i0 + r, d)] : 0.0;
        b.qb[r * D + d] = q;
        b.aqb[r * D + d] = std::abs(q);
        b.aqbf[r * D + d] = float_up(std::abs(q));
      }
    exact_.logits(b, tiles);
    RowPlan plan[kRows];
    for (int64_t r = 0; r < count; ++r) plan[r] = weights(i0 + r, r, key_end, b);
    for (int64_t r = count; r < kRows; ++r) exact_.clear(r);
    const bool any_below = std::any_of(plan, plan + count, [](const RowPlan& x) { return x.any_below; });
    if (h_.float_values)
      for (int64_t r = 0; r < kRows; ++r) {
        const int64_t at = r * h_.n16;
        to_float_kernel(&b.pw[at], &b.pwf[at], key_end);
        to_float_kernel(&b.vis[at], &b.visf[at], key_end);
        to_float_kernel(&b.devw[at], &b.devwf[at], key_end);
        if (any_below) to_float_kernel(&b.d16[at], &b.d16f[at], key_end);
      }
    for (int64_t c0 = 0; c0 < sh.value_dim; c0 += kCols) columns(i0, count, c0, key_end, plan, any_below, b);
    for (int64_t r = 0; r < count; ++r)
      if (plan[r].careful) Exact::careful(p_, bh_, i0 + r, o_);
  }

 private:
  // Row r of the block (query i): logits, domain, weights and their shifts
  // into the block's scratch row r; keys past key_end are hidden.
  RowPlan weights(int64_t i, int64_t r, int64_t key_end, BlockScratch& b) {
    const Shape& sh = p_.shape;
    const int64_t n16 = h_.n16, D = sh.head_dim;
    const int64_t row = bh_ * sh.q_len + i;
    double* dot = &b.dot[r * n16];
    double* absd = &b.absd[r * n16];
    double* x = &b.x[r * n16];
    double* w = &b.w[r * n16];
    double* vis = &b.vis[r * n16];
    RowPlan plan;
    const RowTransform tr = transforms_ ? row_transform(p_, bh_, i) : RowTransform{};
    if (!in_domain(r, key_end, tr, b)) {
      plan.careful = true;  // outside, or too near the edge to decide here: the exact test and the careful path
      clear(r, b);
      return plan;
    }
    const double ascale = std::abs(scale_);
    const KeyRange keys = key_range(p_, bh_, i);
    const int64_t n8 = (key_end + 7) / 8 * 8;  // within the tiles the logits kernel formed
    const double* bias = p_.has_bias() ? &p_.bias[p_.bias_at(bh_, i, 0)] : nullptr;  // [kv_len]
    double n_vis = 0;
    if (p_.mask.empty() && !bias) {  // the keys of the range, as the loop below would find them
      std::fill(vis, vis + n8, 0.0);
      std::fill(vis + keys.begin, vis + keys.end, 1.0);
      n_vis = static_cast<double>(keys.end - keys.begin);
    } else {
      for (int64_t j = 0; j < n8; ++j) {
        const bool seen = j >= keys.begin && j < keys.end && p_.mask_allows(bh_, i, j) && (!bias || bias[j] != -kInf);
        vis[j] = seen ? 1.0 : 0.0;
        n_vis += vis[j];
      }
    }
    plan.range = n_vis == static_cast<double>(keys.end - keys.begin);
    plan.first = keys.begin;
    plan.last = keys.end;
    if (n_vis == 0) {
      plan.empty = true;
      o_.entropy[row] = std::numeric_limits<double>::quiet_NaN();
      empty_row_lse(p_, bh_, i, oracle_arithmetic<double>(), o_);
      clear(r, b);
      return plan;
    }
    o_.row_in_domain[row] = 1;
    double m = 0, total = 1;
    RowLogits lg;
    lg.tr = tr;
    lg.sink = sinks_;
    lg.s = p_.sink_of(bh_);
    lg.dt = dt_;
    lg.x_dt = &b.xdt[r * n16];
    lg.x_or = &b.xor_[r * n16];
    exact_.weights(r, b, n8, lg, m, total);  // dot: s_j, absd: a_j, x: s_j - m, w: exp(x_j)
    // exp_err is every seen key's constant term: a declared numerics bit's allowance joins it
    // (numerics_allowance.h; not the sink's, which has no dot product).
    const double numerics = numerics_logit_allowance(p_, bh_, i, [&](int64_t j) { return j < n8 && vis[j] > 0; });
    LogitErrorTerms e_dt_terms{g_dt_, dt_.u, dt_.exp_ulps * dt_.u + numerics, dt_.u16, ascale * dt_.tiny, 0.0};
    for (int64_t d = 0; d < D; ++d) e_dt_terms.qsum += b.aqb[r * D + d];
    const LogitErrorTerms e_or_terms = exact_.oracle_terms(r, ascale);
    // Per key: weight p (into pw for now), the logit errors (into devw, eor).
    double* pw = &b.pw[r * n16];
    double* devw = &b.devw[r * n16];
    double* eor = &b.eor[r * n16];
    RowErrorSums sums = row_errors_kernel(e_dt_terms, e_or_terms, dot, absd, x, w, vis, h_.k_abs_sum.data(),
                                          lg.x_dt, lg.x_or, total, pw, devw, eor, n8);
    // The sink: a term with a = 0, no flush, and no transform (logit_error's other terms).
    double ps = 0, es_dt = 0, es_or = 0;
    if (lg.sink) {
      ps = lg.w_sink / total;
      const double xs = std::abs(lg.s - m);
      es_dt = dt_.u * xs + dt_.exp_ulps * dt_.u + dt_.u16 * (std::abs(lg.s) + xs + 1);
      es_or = e_or_terms.u * xs + e_or_terms.exp_err;
      sums.e_max = std::max(sums.e_max, es_dt);
      sums.y_dt += ps * expm1_up(es_dt);
      sums.y_or += ps * expm1_up(es_or);
    }
    if (!(sums.e_max <= kFastMaxLogitError)) {
      plan.careful = true;
      clear(r, b);
      return plan;
    }
    o_.entropy[row] = sums.entropy;
    // In place: p_j becomes p_j + shift_dt_j, e_dt_j the deviation weight F shift_dt_j + shift_or_j.
    const double E_dt = std::log1p(sums.y_dt), E_or = std::log1p(sums.y_or);
    bool any_below = row_shifts_kernel(pw, devw, eor, vis, E_dt, E_or, dt_.weight_floor, dt_.weight_step, total,
                                       kBoundSafetyFactor, devw, pw, &b.d16[r * n16], n8);
    if (lg.sink) {  // row_shifts_kernel's formulas for the sink's term
      const double pf = std::max(ps, kWeightFloor), gd = es_dt + E_dt, go = es_or + E_or;
      plan.sink_sdt = std::max(std::min(1 - ps, pf * expm1_up(gd)), pf * one_minus_exp_neg_up(gd));
      plan.sink_sor = std::max(std::min(1 - ps, pf * expm1_up(go)), pf * one_minus_exp_neg_up(go));
      if (dt_.weight_floor > 0) {
        const double lo = ps - plan.sink_sdt, hi = ps + plan.sink_sdt;
        double d = lo < dt_.weight_floor ? dt_.weight_step : 0.0;
        if (lo * total < dt_.weight_floor) d = std::max(d, std::min(hi, dt_.weight_floor / total));
        plan.sink_d16 = d;
        any_below |= d > 0;
      }
    }
    const double terms = n_vis + (lg.sink ? 1 : 0);
    // The lse, m + log L, and its bound (bound_arithmetic.h lse_bound) with E
    // at its upper bounds log1p(y); the oracle's lse is formed in double.
    const double log_total = std::log(total);
    const double d16_sum = any_below ? lane_sum(&b.d16[r * n16], n8) + plan.sink_d16 : 0.0;
    o_.lse_exact[row] = m + log_total;
    o_.lse_bound[row] =
        lse_bound(dt_, oracle_arithmetic<double>(), E_dt, E_or, terms, m, log_total, m + log_total, d16_sum);
    plan.total = total;
    plan.m = m;
    plan.n_vis = n_vis;
    plan.terms = terms;
    plan.acc_dt = accumulation_coefficient(dt_, terms, m);
    plan.acc_or = exact_.accumulation(terms);
    plan.floor_or = exact_.floor(terms);
    plan.any_below = any_below;
    if (h_.float_values) {  // what rounding o to a float may add to the deviation sums (columns)
      plan.devw_sum = double_sum_up(lane_sum(devw, n8), n8);
      plan.d16_sum = double_sum_up(d16_sum, n8);
    }
    return plan;
  }

  // Row r contributes nothing to the block's sums (handed elsewhere, or empty).
  void clear(int64_t r, BlockScratch& b) {
    const int64_t n16 = h_.n16;
    for (auto* a : {&b.w, &b.pw, &b.devw, &b.vis, &b.d16})
      std::fill(a->begin() + r * n16, a->begin() + (r + 1) * n16, 0.0);
    exact_.clear(r);
  }

  // The representable domain (row_in_finite_domain) decided from the block's
  // sums when it is clear, by the exact test otherwise.
  bool in_domain(int64_t r, int64_t key_end, const RowTransform& tr, const BlockScratch& b) const {
    const Shape& sh = p_.shape;
    const int64_t D = sh.head_dim;
    const double ascale = std::abs(scale_);
    bool clear_inside = h_.inputs_finite && std::isfinite(ascale);
    double qmax = 0, qsq = 0;
    for (int64_t d = 0; d < D && clear_inside; ++d) {
      const double q = b.qb[r * D + d];
      clear_inside = std::isfinite(q);
      qmax = std::max(qmax, std::abs(q));
      qsq += q * q;
    }
    const double big = std::max(1.0, ascale) * kDomainMargin;
    clear_inside = clear_inside && ascale * qmax * kDomainMargin < std::min(half_compute_, half_store_);
    const double* dot = &b.dot[r * h_.n16];
    const double* absd = &b.absd[r * h_.n16];
    double raw_max = 0, stored_max = 0;
    if (clear_inside) logit_maxima_kernel(dot, absd, logit_rounding_, key_end, raw_max, stored_max);
    // Keys no row of the block sees were not formed: Cauchy-Schwarz bounds them,
    // sum_d |q_d k_jd| <= ||q|| ||k_j||.
    const double tail = std::sqrt(qsq) * h_.norm_tail[key_end];
    raw_max = std::max(raw_max, tail);
    stored_max = std::max(stored_max, tail * (1 + logit_rounding_));
    clear_inside = clear_inside && raw_max * big < half_compute_ && stored_max * big < half_store_;
    if (clear_inside && sinks_) clear_inside = std::abs(p_.sink_of(bh_)) * kDomainMargin < chain_limit_;
    if (clear_inside && tr.any()) clear_inside = chain_inside(tr, ascale * raw_max);
    // Otherwise careful_row decides, with row_in_finite_domain.
    return clear_inside;
  }

  // The v2 logit chain (logit_chain.h) of every key of the row stays clearly
  // below what a logit may reach, from bounds on each step: |s| <= S (the
  // largest |scale| sum_d |q_d k_jd|), the cap, the largest finite |bias| of
  // the row's keys, the largest ALiBi term. A NaN or +inf bias: the exact test decides.
  bool chain_inside(const RowTransform& tr, double S) const {
    double B = 0;
    if (tr.bias)
      for (int64_t j = 0; j < h_.n; ++j) {
        const double x = tr.bias[j];
        if (std::isnan(x) || x == kInf) return false;
        if (x != -kInf) B = std::max(B, std::abs(x));
      }
    const double far = static_cast<double>(std::max(std::abs(tr.diagonal), std::abs(tr.diagonal - (h_.n - 1))));
    const double A = tr.alibi ? std::abs(tr.slope) * far : 0.0;
    const double cap = tr.softcap > 0 ? std::min(S, tr.softcap) : S;
    const double reach = std::max(S, cap + B + A);
    return (reach + logit_rounding_ * S) * chain_slack_ * kDomainMargin < chain_limit_;
  }

  void columns(int64_t i0, int64_t count, int64_t c0, int64_t key_end, const RowPlan* plan, bool any_below,
               BlockScratch& b) {
    const Shape& sh = p_.shape;
    const int64_t n16 = h_.n16;
    const int64_t lanes = std::min<int64_t>(kCols, sh.value_dim - c0);
    double out[kRows * kCols], sabs[kRows * kCols], vmax[kRows * kCols], dev[kRows * kCols], s16[kRows * kCols];
    bool in_double = !h_.float_values;
    if (h_.float_values) {
      values_float_kernel(h_.vf_slab(c0), kCols, 0, b.w.data(), b.pwf.data(), n16, key_end, out, sabs);
      for (int64_t r = 0; r < count; ++r) {  // max_j |v_jc| over the row's keys: by blocks where they are a range
        if (plan[r].careful || plan[r].empty) continue;
        if (plan[r].range) range_max_kernel(h_.vf_slab(c0), h_.vf_max_slab(c0), plan[r].first, plan[r].last, &vmax[r * kCols]);
        else masked_max_kernel(h_.vf_slab(c0), &b.visf[r * n16], key_end, &vmax[r * kCols]);
      }
      exact_.values(c0, b, key_end, plan, sabs, out);
      deviation_float_kernel(h_.vf_slab(c0), kCols, 0, out, b.devwf.data(), any_below ? b.d16f.data() : nullptr, n16,
                             key_end, dev, s16);
      in_double = !lift_float_sums(count, lanes, key_end, plan, any_below, out, vmax, sabs, dev, s16);
    }
    if (in_double) {  // the f64 path, V not all floats, or a float sum that overflowed
      // The sum in double only where Exact takes it (values' contract).
      const bool exact_in_double = !h_.float_values && Exact::kValuesFromDouble;
      const double* v = double_slab(c0);
      // max_j |v_jc|: from the float path already, by blocks where every row's keys are a range, else masked here.
      bool masked_max = false;
      for (int64_t r = 0; r < count && !h_.float_values; ++r)
        masked_max |= !plan[r].careful && !plan[r].empty && !plan[r].range;
      values_kernel(v, kCols, 0, b.w.data(), b.pw.data(), b.vis.data(), n16, key_end, exact_in_double ? out : nullptr,
                    sabs, masked_max ? vmax : nullptr);
      if (!h_.float_values && !masked_max)
        for (int64_t r = 0; r < count; ++r)
          if (!plan[r].careful && !plan[r].empty)
            range_max_kernel_d(v, h_.v_max_slab(c0), plan[r].first, plan[r].last, &vmax[r * kCols]);
      if (!h_.float_values) exact_.values(c0, b, key_end, plan, sabs, out);
      deviation_kernel(v, kCols, 0, out, b.devw.data(), any_below ? b.d16.data() : nullptr, n16, key_end, dev, s16);
    }
    const double store = std::numeric_limits<double>::epsilon() / 2;  // exact rounded to double
    for (int64_t r = 0; r < count; ++r) {
      const RowPlan& pl = plan[r];
      if (pl.careful) continue;
      for (int64_t l = 0; l < lanes; ++l) {
        const int64_t at = p_.out_at(bh_, i0 + r, c0 + l);
        if (pl.empty) {
          o_.exact[at] = 0;
          o_.bound[at] = kInf;
          continue;
        }
        const int k = static_cast<int>(r * kCols + l);
        const double outd = out[k];
        // The sink's term: value 0, so |v - o| = |o| (and max(|v|, |v - o|) = |o|).
        const double ao = std::abs(outd);
        const double underflow = (pl.terms + 2) * dt_.tiny * (1 + vmax[k] + ao) + dt_.out_floor +
                                 (any_below ? s16[k] + pl.sink_d16 * ao : 0.0);
        // bound_arithmetic.h's F b_dt + b_or, with both deviation sums in dev (F sdt_j + sor_j).
        const double b_dt = kBoundSafetyFactor * (pl.acc_dt * sabs[k] + pl.sink_sdt * ao + underflow);
        const double b_or = pl.acc_or * sabs[k] + pl.sink_sor * ao + store * ao + pl.floor_or * (1 + vmax[k] + ao) +
                            exact_.values_error(r);
        o_.exact[at] = outd;
        o_.bound[at] = b_dt + dev[k] + b_or;
      }
    }
  }

  // V's columns [c0, c0 + kCols) in double, [kv_len][kCols]: the head's, or
  // (a float sum of the slab overflowed) its floats widened, exactly.
  const double* double_slab(int64_t c0) {
    if (!h_.float_values) return h_.v_slab(c0);
    const float* f = h_.vf_slab(c0);
    slab_.assign(f, f + h_.n * kCols);
    return slab_.data();
  }

  // The float sums of values_float_kernel and deviation_float_kernel lifted
  // over the exact ones in place (docs/tolerance.md, "The bound's sums in
  // float"): float_sum_factor, the underflow of each term, and |o - fl(o)|
  // times the row's sum of the weights the deviation sum takes. False where
  // one is not finite (a float sum overflowed): columns redoes them in double.
  bool lift_float_sums(int64_t count, int64_t lanes, int64_t key_end, const RowPlan* plan, bool any_below,
                       const double* out, const double* vmax, double* sabs, double* dev, double* s16) const {
    bool finite = true;
    for (int64_t r = 0; r < count; ++r) {
      const RowPlan& pl = plan[r];
      if (pl.careful || pl.empty) continue;
      for (int64_t l = 0; l < lanes; ++l) {
        const int64_t k = r * kCols + l;
        const double dev_scale = vmax[k] + std::abs(out[k]), round_o = float_rounding(out[k]);
        sabs[k] = float_sum_up(sabs[k], key_end, pl.n_vis, vmax[k]);
        dev[k] = float_sum_up(dev[k], key_end, pl.n_vis, dev_scale, round_o * pl.devw_sum);
        s16[k] = any_below ? float_sum_up(s16[k], key_end, pl.n_vis, dev_scale, round_o * pl.d16_sum) : 0.0;
        finite = finite && std::isfinite(sabs[k]) && std::isfinite(dev[k]) && std::isfinite(s16[k]);
      }
    }
    return finite;
  }

  const Problem& p_;
  const HeadKeys& h_;
  int64_t bh_;
  OracleResult& o_;
  Exact exact_;
  Arithmetic dt_;
  std::vector<double> slab_;  // double_slab's widened floats
  double scale_ = 1, g_dt_ = 0, half_compute_ = 0, half_store_ = 0, logit_rounding_ = 0;
  bool transforms_ = false, sinks_ = false;  // softcap, bias or ALiBi; sinks
  double chain_limit_ = 0, chain_slack_ = 1;  // what the v2 logit chain must stay below (row_in_finite_domain)
};

// Every row of head bh: its blocks of rows on compute_threads() threads.
// `block_flop` is about what one block of rows costs (for parallel_for).
// Padding rows (q_lens) are marked, never read; a batch without keys
// (kv_lens 0) goes to the careful path, whose rows all see nothing.
template <class Exact> void fast_head_with(const Problem& p, int64_t bh, OracleResult& o, double block_flop) {
  const Shape& sh = p.shape;
  const int64_t rows = std::min(sh.q_len, p.q_len_of(bh / sh.heads));
  for (int64_t i = rows; i < sh.q_len; ++i) mark_padding_row(p, bh, i, o);
  const HeadKeys h = head_keys(p, bh, Exact::kFloatBound);
  if (h.n == 0) {
    for (int64_t i = 0; i < rows; ++i) Exact::careful(p, bh, i, o);
    return;
  }
  const int64_t blocks = (rows + kRows - 1) / kRows;
  // Blocks write disjoint rows of o. Each worker takes the next block when it
  // is done with one: blocks differ in cost (a causal block's keys grow with
  // its rows), and equal ranges of blocks would leave one core idle for a
  // quarter of a causal head.
  const int64_t workers = std::min<int64_t>(compute_threads(), blocks);
  std::atomic<int64_t> next{0};
  parallel_for(workers, block_flop * static_cast<double>(blocks) / static_cast<double>(workers),
               [&](int64_t, int64_t) {
                 BlockScratch b;
                 b.resize(sh.head_dim, h.n16);
                 FastBlock<Exact> block(p, h, bh, o);
                 for (int64_t k; (k = next.fetch_add(1, std::memory_order_relaxed)) < blocks;) {
                   const int64_t i0 = k * kRows;
                   block.rows(i0, std::min<int64_t>(kRows, rows - i0), b);
                 }
               });
}

}  // namespace attncheck::oracle_detail
