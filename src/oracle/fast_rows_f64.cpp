// The oracle's f64 path (oracle_paths.h, fast_block.h): the exact value in
// double-word arithmetic (double_double.h), vectorised, where the double path
// would be no more precise than the f64 implementations it judges. Only the
// exact value needs the extra precision: the bound's quantities are computed
// in double by the double path's kernels, from the hi parts. Per block of
// kRows rows of one head:
//   logits s_j   Dot2 per (row, key), lanes over 16 keys (dw_logits_kernel),
//                times the scale in DW; m = the largest visible s_j (DW order)
//   weights      w_j = exp(s_j - m) in DW (dd_exp_array), total = sum_j w_j in DW
//   output       o_c = (sum_j w_j v_jc) / total, Dot2 over j, lanes over 16
//                columns, 4 rows at a time (dw_values_kernel), rounded to double
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
      : h_(h), n16_(h.n16), D_(p.shape.head_dim), scale_(p.effective_scale()) {
    for (auto* a : {&s_hi_, &s_lo_, &x_lo_, &w_lo_}) a->assign(kRows * n16_, 0.0);
  }

  // dot gets the hi parts (the domain test's logits), absd the |q||k| sums.
  void logits(BlockScratch& b, int64_t tiles) {
    dw_logits_kernel(b.qb.data(), b.aqb.data(), h_.kt.data(), D_, n16_, tiles, s_hi_.data(), s_lo_.data(),
                     b.absd.data());
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
  }

  void clear(int64_t r) {
    std::fill(w_lo_.begin() + r * n16_, w_lo_.begin() + (r + 1) * n16_, 0.0);
    total_[r] = {1.0, 0.0};
  }

  void values(int64_t c0, const BlockScratch& b, int64_t key_end, const RowPlan*, double* out) const {
    dw_values_kernel(h_.v_slab(c0), kCols, 0, b.w.data(), w_lo_.data(), n16_, key_end, total_, out);
  }

  // e_or_j = dw_logit_factor(D) a_j + kAddErr u^2 |s_j - m| + kExpErr u^2 + underflow,
  // the subtraction's and exp's terms inflated by (1 + 4u): |x_j| and the
  // kernel's sums are taken from hi parts.
  LogitErrorTerms oracle_terms(double ascale) const {
    const double inflate = 1 + 4 * dd::kU;
    return {dw_logit_factor(D_), dd::kAddErr * dd::kU2 * inflate,
            dd::kExpErr * dd::kU2 * inflate + dw_logit_floor(D_) * std::max(1.0, ascale), 0.0, 0.0, 0.0};
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

  const HeadKeys& h_;
  int64_t n16_, D_;
  double scale_;
  std::vector<double> s_hi_, s_lo_, x_lo_, w_lo_;
  static_assert(kRows == 4, "one total per row of the block");
  dd::DW total_[kRows] = {{1.0, 0.0}, {1.0, 0.0}, {1.0, 0.0}, {1.0, 0.0}};  // of rows that contribute nothing: 1
};

}  // namespace

void fast_head_f64(const Problem& p, int64_t bh, OracleResult& o) {
  const Shape& sh = p.shape;
  // About what one block of rows costs: Dot2 on the logits and on P.V, the bound's sums over V.
  fast_head_with<DoubleWordExact>(p, bh, o,
                                  40.0 * kRows * static_cast<double>(sh.kv_len * (sh.head_dim + sh.value_dim)));
}

}  // namespace attncheck::oracle_detail
