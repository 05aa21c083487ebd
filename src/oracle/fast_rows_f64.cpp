// The oracle's f64 path (oracle_paths.h, fast_block.h): the exact value in
// double-word arithmetic (double_double.h), vectorised, where the double path
// would be no more precise than the f64 implementations it judges. Only the
// exact value needs the extra precision: the bound's quantities are computed
// in double by the double path's kernels, from the hi parts. Per block of
// kRows rows of one head:
//   logits s_j   per (row, key), lanes over 16 keys: split against a power of
//                two (dw_logits_split_kernel) where the row's range allows,
//                else Dot2 (dw_logits_kernel); times the scale in DW;
//                m = the largest visible s_j (DW order)
//   weights      w_j = exp(s_j - m) in DW (dd_exp_array), total = sum_j w_j in DW
//   output       o_c = (sum_j w_j v_jc) / total over j, lanes over 16 columns,
//                4 rows at a time: split against a power of two
//                (dw_values_split_kernel) where its error is negligible, else
//                Dot2 (dw_values_kernel); rounded to double
// The oracle's own error terms are those of this arithmetic (fast_kernels_f64.h;
// derived in docs/tolerance.md, "The f64 path"). Rows the blocked evaluation
// cannot take go to careful_row<long double>.
//
// Compiled with -ffp-contract=off (src/CMakeLists.txt), like every file that
// inlines the double-word operations.
#include <algorithm>
#include <cmath>
#include <vector>

#include "oracle/bound_arithmetic.h"
#include "oracle/double_double.h"
#include "oracle/double_double_array.h"
#include "oracle/double_double_exp.h"
#include "oracle/fast_block.h"
#include "oracle/fast_kernels.h"
#include "oracle/fast_kernels_f64.h"
#include "oracle/logit_chain.h"
#include "oracle/oracle_paths.h"

namespace attncheck::oracle_detail {

namespace {

// FastBlock's Exact (fast_block.h) in double-word. Holds the lo parts (and the
// DW logits) of the block's rows: [kRows][n16] each.
class DoubleWordExact {
 public:
  static constexpr bool kFloatBound = false;  // an f64 problem's values need not fit a float
  static constexpr bool kValuesFromDouble = false;  // values forms the sums in double-word itself

  DoubleWordExact(const Problem& p, const HeadKeys& h, int64_t)
      : h_(h), n16_(h.n16), D_(p.shape.head_dim), scale_(p.effective_scale()), value_dim_(p.shape.value_dim) {
    for (auto* a : {&s_hi_, &s_lo_, &x_lo_, &w_lo_}) a->assign(kRows * n16_, 0.0);
    for (int64_t j = 0; j < h.n; ++j) k1max_ = std::max(k1max_, h.k_abs_sum[j]);  // NaN stays out: Dot2 decides
    if (!std::isfinite(k1max_)) k1max_ = HUGE_VAL;
    // max_jc |v_jc| of each slab, from its column maxima by chunks (HeadKeys::v_max).
    const int64_t chunks = (h.n + kMaxChunk - 1) / kMaxChunk;
    slab_vmax_.assign(h.dv_pad / kCols, 0.0);
    for (int64_t c0 = 0; c0 < h.dv_pad && h.n > 0; c0 += kCols) {
      double m = 0;
      const double* vm = h.v_max_slab(c0);
      for (int64_t t = 0; t < chunks * kCols; ++t) m = std::isnan(vm[t]) ? HUGE_VAL : std::max(m, vm[t]);
      slab_vmax_[c0 / kCols] = m;
    }
  }

  // dot gets the hi parts (the domain test's logits), absd the |q||k| sums.
  // By splitting (dw_logits_split_kernel) where every row of the block has a
  // sigma and its absolute error stays below kSplitLimit nats; else Dot2.
  void logits(BlockScratch& b, int64_t tiles) {
    bool split = true;
    for (int64_t r = 0; r < kRows; ++r) {
      double qmax = 0;
      for (int64_t d = 0; d < D_; ++d) qmax = std::max(qmax, b.aqb[r * D_ + d]);  // NaN: not taken, see below
      for (int64_t d = 0; d < D_; ++d) split = split && std::isfinite(b.aqb[r * D_ + d]);
      sigma_[r] = dw_split_sigma(qmax, k1max_, D_);
      split = split && sigma_[r] > 0 && dw_split_logit_error(D_) * sigma_[r] * std::abs(scale_) <= kSplitLimit;
    }
    if (split) {
      dw_logits_split_kernel(b.qb.data(), b.aqb.data(), sigma_, h_.kt.data(), D_, n16_, tiles, s_hi_.data(),
                             s_lo_.data(), b.absd.data());
    } else {
      std::fill(sigma_, sigma_ + kRows, 0.0);
      dw_logits_kernel(b.qb.data(), b.aqb.data(), h_.kt.data(), D_, n16_, tiles, s_hi_.data(), s_lo_.data(),
                       b.absd.data());
    }
    for (int64_t r = 0; r < kRows; ++r)
      std::copy(&s_hi_[r * n16_], &s_hi_[r * n16_] + tiles * kTile, &b.dot[r * n16_]);
  }

  void weights(int64_t r, BlockScratch& b, int64_t n8, RowLogits& lg, double& m, double& total) {
    const int64_t at = r * n16_;
    double* dot = &b.dot[at];
    const double* vis = &b.vis[at];
    // a_j = |scale| sum_d |q_d k_jd| in place of absd (and dot scaled, replaced below).
    scale_logits_kernel(dot, &b.absd[at], vis, scale_, n8);
    dd::DW mw = dw_offsets_kernel(&s_hi_[at], &s_lo_[at], vis, scale_, &b.x[at], &x_lo_[at], n8);
    if (lg.tr.any() || lg.sink) mw = transform(lg, &s_hi_[at], &s_lo_[at], vis, &b.x[at], &x_lo_[at], n8);
    std::copy(&s_hi_[at], &s_hi_[at] + n8, dot);  // s_j rounded to double, for the bound
    dd::dd_exp_array(&b.x[at], &x_lo_[at], &b.w[at], &w_lo_[at], n8);
    total_[r] = dw_masked_sum_kernel(&b.w[at], &w_lo_[at], vis, n8);
    if (lg.sink) {
      const dd::DW ws = dd::exp(dd::sub(dd::DW{lg.s, 0.0}, mw));
      total_[r] = dd::add(total_[r], ws);
      lg.w_sink = ws.hi;
    }
    m = mw.hi;
    total = total_[r].hi;
    live_[r] = true;
  }

  void clear(int64_t r) {
    std::fill(w_lo_.begin() + r * n16_, w_lo_.begin() + (r + 1) * n16_, 0.0);
    total_[r] = {1.0, 0.0};
    live_[r] = false;
  }

  // By splitting (dw_values_split_kernel) where its absolute error stays below
  // 2^-20 of the f64 implementation's accumulation term (acc_dt sum_j p_j |v_jc|)
  // in every column of every row the block evaluates; else Dot2.
  void values(int64_t c0, const BlockScratch& b, int64_t key_end, const RowPlan* plan, const double* sabs,
              double* out) {
    const double vmax = slab_vmax_[c0 / kCols];
    const double e = dw_split_value_error(static_cast<double>(key_end));
    const int64_t lanes = std::min<int64_t>(kCols, value_dim_ - c0);
    bool split = true;
    for (int64_t r = 0; r < kRows && split; ++r) {
      sigma_v_[r] = dw_split_sigma(total_[r].hi * (1 + 0x1p-40), vmax, 0);
      values_err_[r] = e * sigma_v_[r] / total_[r].hi * (1 + 4 * dd::kU);  // total >= 1: its largest weight is 1
      split = sigma_v_[r] > 0;
      if (!live_[r] || plan[r].careful || plan[r].empty) continue;  // its outputs are not taken from here
      for (int64_t l = 0; l < lanes && split; ++l) split = values_err_[r] <= 0x1p-20 * plan[r].acc_dt * sabs[r * kCols + l];
    }
    if (split) {
      dw_values_split_kernel(h_.v_slab(c0), kCols, 0, b.w.data(), w_lo_.data(), n16_, key_end, total_, sigma_v_, out);
      return;
    }
    std::fill(values_err_, values_err_ + kRows, 0.0);
    dw_values_kernel(h_.v_slab(c0), kCols, 0, b.w.data(), w_lo_.data(), n16_, key_end, total_, out);
  }
  double values_error(int64_t r) const { return values_err_[r]; }

  // e_or_j = dw_logit_factor(D) a_j + kAddErr u^2 |s_j - m| + kExpErr u^2 + underflow,
  // the subtraction's and exp's terms inflated by (1 + 4u): |x_j| and the
  // kernel's sums are taken from hi parts. Split logits (sigma_[r] > 0):
  // dw_split_logit_factor(D) a_j + dw_split_logit_error(D) sigma_r |scale| + the same.
  LogitErrorTerms oracle_terms(int64_t r, double ascale) const {
    const double inflate = 1 + 4 * dd::kU;
    const double rest = dd::kExpErr * dd::kU2 * inflate + dw_logit_floor(D_) * std::max(1.0, ascale);
    if (sigma_[r] > 0)
      return {dw_split_logit_factor(D_), dd::kAddErr * dd::kU2 * inflate,
              rest + dw_split_logit_error(D_) * sigma_[r] * ascale * inflate, 0.0, 0.0, 0.0};
    return {dw_logit_factor(D_), dd::kAddErr * dd::kU2 * inflate, rest, 0.0, 0.0, 0.0};
  }
  double accumulation(double n) const { return dw_accumulation_coefficient(n); }
  double floor(double n) const { return dw_output_floor(n); }

  static void careful(const Problem& p, int64_t bh, int64_t i, OracleResult& o) {
    careful_row<long double>(p, bh, i, o);
  }

 private:
  // The v2 chain on the scaled DW logits s (in place), in x87 long double
  // (64-bit significand: its own error, transform_error in long double's u,
  // plus the score's rounding to it, a fraction 2^-11 of f64's own), each z
  // held exactly as a DW; then m (with the sink) and x = s - m again.
  static dd::DW transform(RowLogits& lg, double* s_hi, double* s_lo, const double* vis, double* x_hi, double* x_lo,
                          int64_t n) {
    const Arithmetic orc = oracle_arithmetic<long double>();
    if (lg.tr.any())
      for (int64_t j = 0; j < n; ++j) {
        if (!(vis[j] > 0)) {
          lg.x_dt[j] = lg.x_or[j] = 0;
          continue;
        }
        const long double sl = static_cast<long double>(s_hi[j]) + static_cast<long double>(s_lo[j]);
        const LogitChain<long double> ch = logit_chain<long double>(lg.tr, j, sl);
        s_hi[j] = static_cast<double>(ch.z);
        s_lo[j] = static_cast<double>(ch.z - static_cast<long double>(s_hi[j]));  // exact: z's last 11 bits
        lg.x_dt[j] = transform_error(lg.dt, lg.tr, ch);
        lg.x_or[j] = transform_error(orc, lg.tr, ch) + orc.u * std::abs(static_cast<double>(sl));
      }
    // The max in the DW order (dw_offsets_kernel), the sink included.
    dd::DW m{lg.sink ? lg.s : -HUGE_VAL, 0.0};
    for (int64_t j = 0; j < n; ++j)
      if (vis[j] > 0 && (s_hi[j] > m.hi || (s_hi[j] == m.hi && s_lo[j] > m.lo))) m = {s_hi[j], s_lo[j]};
    for (int64_t j = 0; j < n; ++j) {
      const dd::DW x = dd::sub(dd::DW{s_hi[j], s_lo[j]}, m);
      x_hi[j] = vis[j] > 0 ? x.hi : 0.0;
      x_lo[j] = vis[j] > 0 ? x.lo : 0.0;
    }
    return m;
  }

  // Split logits only where their error is this small (nats): 2^-11 of f64's
  // u, far below what the bound gives the f64 implementation.
  static constexpr double kSplitLimit = 0x1p-64;
  const HeadKeys& h_;
  int64_t n16_, D_;
  double scale_;
  int64_t value_dim_;
  double k1max_ = 0;                // max_j sum_d |k_jd| over the head's keys, as computed
  std::vector<double> slab_vmax_;   // [dv_pad / kCols]: max |v_jc| over each slab
  double sigma_[kRows] = {};        // the block's split powers of two for the logits; 0: Dot2
  double sigma_v_[kRows] = {};      // and for the values (the last values())
  double values_err_[kRows] = {};   // the last values()'s split error, 0 after Dot2
  bool live_[kRows] = {};           // row r's weights are in the block (weights(), not clear())
  std::vector<double> s_hi_, s_lo_, x_lo_, w_lo_;
  static_assert(kRows == 4, "one total per row of the block");
  dd::DW total_[kRows] = {{1.0, 0.0}, {1.0, 0.0}, {1.0, 0.0}, {1.0, 0.0}};  // of rows that contribute nothing: 1
};

}  // namespace

void fast_head_f64(const Problem& p, int64_t bh, OracleResult& o) {
  const Shape& sh = p.shape;
  // About what one block of rows costs: the DW logits and P.V, the bound's sums over V.
  fast_head_with<DoubleWordExact>(p, bh, o,
                                  40.0 * kRows * static_cast<double>(sh.kv_len * (sh.head_dim + sh.value_dim)));
}

}  // namespace attncheck::oracle_detail
