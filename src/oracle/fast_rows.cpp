// The oracle's double path, blocked and vectorised (oracle_paths.h).
//
// For one head (K [kv_len][head_dim], V [kv_len][value_dim]) its keys are
// first transposed into Kt [head_dim][n16] (and |K|t), n16 = kv_len rounded up
// to a whole tile of kTile keys. Query rows then go in blocks of kRows: the
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
// edge go to careful_row.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "oracle/bound_arithmetic.h"
#include "oracle/oracle_paths.h"
#include "oracle/fast_kernels.h"
#include "oracle/vector_exp.h"
#include "parallel/parallel_for.h"

namespace attncheck::oracle_detail {

namespace {

// The fast domain test trusts its sums (formed in another order than
// row_in_finite_domain's) this far from a threshold; nearer, the exact test decides.
constexpr double kDomainMargin = 1 + 1e-6;

// What every row of a head shares: the keys transposed and padded, the sums
// the domain test and the flush-to-zero term need.
struct HeadKeys {
  int64_t n = 0, n16 = 0, D = 0;
  std::vector<double> kt, akt;     // [D][n16], K^T and |K|^T, zero past kv_len
  std::vector<double> k_abs_sum;   // [n16]: sum_d |k_jd|, 0 past kv_len
  std::vector<double> norm_tail;   // [kv_len + 1]: max over keys >= j of ||k_j||_2 (0 at kv_len)
  int64_t dv_pad = 0;              // value_dim rounded up to whole kCols
  std::vector<double> v;           // [kv_len][dv_pad]: V, zero columns past value_dim
  bool inputs_finite = true;       // every k and v of the head is finite, and every sum_j |v_jc| is below C / 2
};

HeadKeys head_keys(const Problem& p, int64_t bh) {
  const Shape& sh = p.shape;
  HeadKeys h;
  h.n = sh.kv_len;
  h.D = sh.head_dim;
  h.n16 = (h.n + kTile - 1) / kTile * kTile;
  h.kt.assign(h.D * h.n16, 0.0);
  h.akt.assign(h.D * h.n16, 0.0);
  h.k_abs_sum.assign(h.n16, 0.0);
  h.norm_tail.assign(h.n + 1, 0.0);
  std::vector<double> norm(h.n);
  // The transpose in blocks of 8 keys, so each write of Kt covers a cache line.
  for (int64_t j0 = 0; j0 < h.n; j0 += 8) {
    const int64_t j1 = std::min(h.n, j0 + 8);
    for (int64_t d = 0; d < h.D; ++d)
      for (int64_t j = j0; j < j1; ++j) {
        const double kd = p.k[p.k_at(bh, j, d)];
        h.kt[d * h.n16 + j] = kd;
        h.akt[d * h.n16 + j] = std::abs(kd);
      }
  }
  for (int64_t j = 0; j < h.n; ++j) {
    const double* kr = &p.k[p.k_at(bh, j, 0)];
    double sum = 0, sq = 0;
    for (int64_t d = 0; d < h.D; ++d) {
      sum += std::abs(kr[d]);
      sq += kr[d] * kr[d];
      h.inputs_finite = h.inputs_finite && std::isfinite(kr[d]);
    }
    h.k_abs_sum[j] = sum;
    norm[j] = std::sqrt(sq);
  }
  for (int64_t j = h.n - 1; j >= 0; --j) h.norm_tail[j] = std::max(h.norm_tail[j + 1], norm[j]);
  const double half_compute = max_finite(compute_dtype(p.dtype)) / 2;
  h.dv_pad = (sh.value_dim + kCols - 1) / kCols * kCols;
  h.v.assign(h.n * h.dv_pad, 0.0);
  std::vector<double> col(sh.value_dim, 0.0);
  for (int64_t j = 0; j < h.n; ++j)
    for (int64_t c = 0; c < sh.value_dim; ++c) {
      const double vj = p.v[p.v_at(bh, j, c)];
      h.v[j * h.dv_pad + c] = vj;
      h.inputs_finite = h.inputs_finite && std::isfinite(vj);
      col[c] += std::abs(vj);
    }
  for (double s : col) h.inputs_finite = h.inputs_finite && s * kDomainMargin < half_compute;
  return h;
}

// Scratch of one block of kRows rows: [kRows][n16] each.
struct BlockScratch {
  std::vector<double> qb, aqb;                      // [kRows][D]
  std::vector<double> dot, absd, x, w, pw, sdt, sor, vis, d16;
  void resize(int64_t D, int64_t n16) {
    qb.assign(kRows * D, 0.0);
    aqb.assign(kRows * D, 0.0);
    for (auto* a : {&dot, &absd, &x, &w, &pw, &sdt, &sor, &vis, &d16}) a->assign(kRows * n16, 0.0);
  }
};

struct RowPlan {
  bool careful = false;  // handed to careful_row
  bool empty = false;    // sees no key
  double total = 1, m = 0, acc_dt = 0, acc_or = 0, n_vis = 0;
  bool any_below = false;
};

class FastBlock {
 public:
  FastBlock(const Problem& p, const HeadKeys& h, int64_t bh, OracleResult& o)
      : p_(p), h_(h), bh_(bh), o_(o), dt_(arithmetic_of(p.dtype)), orc_(oracle_arithmetic<double>(kVectorExpUlps)) {
    const Shape& sh = p.shape;
    scale_ = p.effective_scale();
    g_dt_ = gamma(static_cast<double>(sh.head_dim) + 3, dt_.u);
    g_or_ = gamma(static_cast<double>(sh.head_dim) + 3, orc_.u);
    const DType compute = compute_dtype(p.dtype);
    half_compute_ = max_finite(compute) / 2;
    half_store_ = compute != p.dtype ? max_finite(p.dtype) / 2 : kInf;
    logit_rounding_ = gamma(static_cast<double>(sh.head_dim) + 3, unit_roundoff(compute));
  }

  void rows(int64_t i0, int64_t count, BlockScratch& b) {
    const Shape& sh = p_.shape;
    const int64_t D = sh.head_dim, n = h_.n, n16 = h_.n16;
    // The keys any row of the block may see: the causal rule's prefix.
    int64_t key_end = 0;
    for (int64_t r = 0; r < count; ++r)
      key_end = std::max(key_end, std::clamp<int64_t>(p_.causal_key_end(i0 + r), 0, n));
    const int64_t tiles = (key_end + kTile - 1) / kTile;
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t d = 0; d < D; ++d) {
        const double q = r < count ? p_.q[p_.q_at(bh_, i0 + r, d)] : 0.0;
        b.qb[r * D + d] = q;
        b.aqb[r * D + d] = std::abs(q);
      }
    logits_kernel(b.qb.data(), b.aqb.data(), h_.kt.data(), h_.akt.data(), D, n16, tiles, b.dot.data(), b.absd.data());
    RowPlan plan[kRows];
    for (int64_t r = 0; r < count; ++r) plan[r] = weights(i0 + r, r, key_end, b);
    const bool any_below = std::any_of(plan, plan + count, [](const RowPlan& x) { return x.any_below; });
    for (int64_t c0 = 0; c0 < sh.value_dim; c0 += kCols) columns(i0, count, c0, key_end, plan, any_below, b);
    for (int64_t r = 0; r < count; ++r)
      if (plan[r].careful) careful_row<double>(p_, bh_, i0 + r, o_);
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
    if (!in_domain(r, key_end, b)) {
      plan.careful = true;  // outside, or too near the edge to decide here: the exact test and the careful path
      clear(r, b);
      return plan;
    }
    const double ascale = std::abs(scale_);
    const int64_t end = std::clamp<int64_t>(p_.causal_key_end(i), 0, h_.n);
    const int64_t n8 = (key_end + 7) / 8 * 8;  // within the tiles the logits kernel formed
    double n_vis = 0;
    for (int64_t j = 0; j < n8; ++j) {
      vis[j] = j < end && p_.mask_allows(bh_, i, j) ? 1.0 : 0.0;
      n_vis += vis[j];
    }
    if (n_vis == 0) {
      plan.empty = true;
      o_.entropy[row] = std::numeric_limits<double>::quiet_NaN();
      clear(r, b);
      return plan;
    }
    o_.row_in_domain[row] = 1;
    const double m = scale_logits_kernel(dot, absd, vis, scale_, n8);  // dot: s_j, absd: a_j
    offsets_kernel(dot, vis, m, x, n8);
    exp_array(x, w, n8);
    const double total = masked_sum_kernel(w, vis, n8);
    LogitErrorTerms e_dt_terms{g_dt_, dt_.u, dt_.exp_ulps * dt_.u, dt_.u16, ascale * dt_.tiny, 0.0};
    for (int64_t d = 0; d < D; ++d) e_dt_terms.qsum += b.aqb[r * D + d];
    const LogitErrorTerms e_or_terms{g_or_, orc_.u, orc_.exp_ulps * orc_.u, 0.0, 0.0, 0.0};
    // Per key: weight p (into pw for now), the logit errors (into sdt, sor).
    double* pw = &b.pw[r * n16];
    double* sdt = &b.sdt[r * n16];
    double* sor = &b.sor[r * n16];
    const RowErrorSums sums = row_errors_kernel(e_dt_terms, e_or_terms, dot, absd, x, w, vis, h_.k_abs_sum.data(),
                                                total, pw, sdt, sor, n8);
    if (!(sums.e_max <= kFastMaxLogitError)) {
      plan.careful = true;
      clear(r, b);
      return plan;
    }
    o_.entropy[row] = sums.entropy;
    // In place: p_j becomes p_j + shift_dt_j, the errors become the shifts.
    const bool any_below = row_shifts_kernel(pw, sdt, sor, vis, std::log1p(sums.y_dt), std::log1p(sums.y_or),
                                             dt_.weight_floor, dt_.weight_step, total, sdt, sor, pw,
                                             &b.d16[r * n16], n8);
    plan.total = total;
    plan.m = m;
    plan.n_vis = n_vis;
    plan.acc_dt = accumulation_coefficient(dt_, n_vis, m);
    plan.acc_or = oracle_accumulation_coefficient(orc_, n_vis);
    plan.any_below = any_below;
    return plan;
  }

  // Row r contributes nothing to the block's sums (handed elsewhere, or empty).
  void clear(int64_t r, BlockScratch& b) {
    const int64_t n16 = h_.n16;
    for (auto* a : {&b.w, &b.pw, &b.sdt, &b.sor, &b.vis, &b.d16})
      std::fill(a->begin() + r * n16, a->begin() + (r + 1) * n16, 0.0);
  }

  // The representable domain (row_in_finite_domain) decided from the block's
  // sums when it is clear, by the exact test otherwise.
  bool in_domain(int64_t r, int64_t key_end, const BlockScratch& b) const {
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
    for (int64_t j = 0; j < key_end && clear_inside; ++j) {
      raw_max = std::max(raw_max, absd[j]);
      stored_max = std::max(stored_max, std::abs(dot[j]) + logit_rounding_ * absd[j]);
    }
    // Keys no row of the block sees were not formed: Cauchy-Schwarz bounds them,
    // sum_d |q_d k_jd| <= ||q|| ||k_j||.
    const double tail = std::sqrt(qsq) * h_.norm_tail[key_end];
    raw_max = std::max(raw_max, tail);
    stored_max = std::max(stored_max, tail * (1 + logit_rounding_));
    // Otherwise careful_row decides, with row_in_finite_domain.
    return clear_inside && raw_max * big < half_compute_ && stored_max * big < half_store_;
  }

  void columns(int64_t i0, int64_t count, int64_t c0, int64_t key_end, const RowPlan* plan, bool any_below,
               BlockScratch& b) {
    const Shape& sh = p_.shape;
    const int64_t n16 = h_.n16;
    const int64_t lanes = std::min<int64_t>(kCols, sh.value_dim - c0);
    double out[kRows * kCols], sabs[kRows * kCols], vmax[kRows * kCols], ddt[kRows * kCols], dor[kRows * kCols],
        s16[kRows * kCols];
    values_kernel(h_.v.data(), h_.dv_pad, c0, b.w.data(), b.pw.data(), b.vis.data(), n16, key_end, out, sabs, vmax);
    for (int r = 0; r < kRows; ++r)
      for (int l = 0; l < kCols; ++l) out[r * kCols + l] /= plan[r].total;
    deviation_kernel(h_.v.data(), h_.dv_pad, c0, out, b.sdt.data(), b.sor.data(), any_below ? b.d16.data() : nullptr,
                     n16, key_end, ddt, dor, s16);
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
        const double underflow =
            (pl.n_vis + 2) * dt_.tiny * (1 + vmax[k] + std::abs(outd)) + dt_.out_floor + (any_below ? s16[k] : 0.0);
        const double b_dt = kBoundSafetyFactor * (pl.acc_dt * sabs[k] + ddt[k] + underflow);
        const double b_or = pl.acc_or * sabs[k] + dor[k] + store * std::abs(outd);
        o_.exact[at] = outd;
        o_.bound[at] = b_dt + b_or;
      }
    }
  }

  const Problem& p_;
  const HeadKeys& h_;
  int64_t bh_;
  OracleResult& o_;
  Arithmetic dt_, orc_;
  double scale_ = 1, g_dt_ = 0, g_or_ = 0, half_compute_ = 0, half_store_ = 0, logit_rounding_ = 0;
};

}  // namespace

void fast_head(const Problem& p, int64_t bh, OracleResult& o) {
  const Shape& sh = p.shape;
  const HeadKeys h = head_keys(p, bh);
  const int64_t blocks = (sh.q_len + kRows - 1) / kRows;
  // About what one block of rows costs: the logits and the bound's sums over V.
  const double flop = 12.0 * kRows * static_cast<double>(sh.kv_len * (sh.head_dim + sh.value_dim));
  // Blocks write disjoint rows of o.
  parallel_for(blocks, flop, [&](int64_t begin, int64_t end) {
    BlockScratch b;
    b.resize(sh.head_dim, h.n16);
    FastBlock block(p, h, bh, o);
    for (int64_t k = begin; k < end; ++k) {
      const int64_t i0 = k * kRows;
      block.rows(i0, std::min<int64_t>(kRows, sh.q_len - i0), b);
    }
  });
}

}  // namespace attncheck::oracle_detail
