// The oracle's double path (oracle_paths.h, fast_block.h): f32, f16 and bf16
// problems, whose exact value double holds far beyond their own precision.
// Here: what every row of a head shares (head_keys), and the path's exact
// arithmetic, all in double with the vectorised exp (vector_exp.h), and the
// bound's sums in float (fast_bound_float.h).
#include <algorithm>
#include <cmath>
#include <vector>

#include "oracle/bound_arithmetic.h"
#include "oracle/fast_block.h"
#include "oracle/fast_bound_float.h"
#include "oracle/fast_kernels.h"
#include "oracle/logit_chain.h"
#include "oracle/oracle_paths.h"
#include "oracle/vector_exp.h"

namespace attncheck::oracle_detail {

namespace {

// Whether x is a float (or NaN): a problem of a float or 16-bit dtype holds floats,
// but a law may hand the oracle other doubles.
bool is_float(double x) { return static_cast<double>(static_cast<float>(x)) == x || std::isnan(x); }

}  // namespace

HeadKeys head_keys(const Problem& p, int64_t bh, bool float_bound) {
  const Shape& sh = p.shape;
  HeadKeys h;
  // The kv head query head bh reads (GQA), and only the keys that exist in its
  // batch: padding keys are never read.
  const int64_t kv = p.kv_of(bh);
  h.n = std::min(sh.kv_len, p.kv_len_of(bh / sh.heads));
  h.D = sh.head_dim;
  h.n16 = (h.n + kTile - 1) / kTile * kTile;
  h.float_keys = float_bound;
  h.float_values = float_bound;
  for (int64_t j = 0; j < h.n && (h.float_keys || h.float_values); ++j) {
    for (int64_t d = 0; d < h.D && h.float_keys; ++d) h.float_keys = is_float(p.k[p.k_at(kv, j, d)]);
    for (int64_t c = 0; c < sh.value_dim && h.float_values; ++c) h.float_values = is_float(p.v[p.v_at(kv, j, c)]);
  }
  if (h.float_keys) h.ktf.assign(h.D * h.n16, 0.0f);
  else h.kt.assign(h.D * h.n16, 0.0);
  if (float_bound && !h.float_keys) h.akt.assign(h.D * h.n16, 0.0f);
  h.k_abs_sum.assign(h.n16, 0.0);
  h.norm_tail.assign(h.n + 1, 0.0);
  std::vector<double> norm(h.n);
  // The transpose in blocks of 8 keys, so each write of Kt covers a cache line.
  for (int64_t j0 = 0; j0 < h.n; j0 += 8) {
    const int64_t j1 = std::min(h.n, j0 + 8);
    for (int64_t d = 0; d < h.D; ++d)
      for (int64_t j = j0; j < j1; ++j) {
        const double kd = p.k[p.k_at(kv, j, d)];
        const int64_t at = ((j / kTile) * h.D + d) * kTile + j % kTile;
        if (h.float_keys) {
          h.ktf[at] = static_cast<float>(kd);
        } else {
          h.kt[at] = kd;
          if (float_bound) h.akt[at] = float_up(std::abs(kd));
        }
      }
  }
  for (int64_t j = 0; j < h.n; ++j) {
    const double* kr = &p.k[p.k_at(kv, j, 0)];
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
  if (h.float_values) h.vf.assign(h.n * h.dv_pad, 0.0f);
  else h.v.assign(h.n * h.dv_pad, 0.0);
  std::vector<double> col(sh.value_dim, 0.0);
  for (int64_t j = 0; j < h.n; ++j)
    for (int64_t c = 0; c < sh.value_dim; ++c) {
      const double vj = p.v[p.v_at(kv, j, c)];
      const int64_t at = (c / kCols * h.n + j) * kCols + c % kCols;  // slab c / kCols, row j
      if (h.float_values) h.vf[at] = static_cast<float>(vj);
      else h.v[at] = vj;
      h.inputs_finite = h.inputs_finite && std::isfinite(vj);
      col[c] += std::abs(vj);
    }
  if (h.float_values && h.n > 0) {  // (a batch without keys goes to the careful path whole)
    const int64_t blocks = (h.n + kMaxChunk - 1) / kMaxChunk;
    h.vf_max.assign(h.dv_pad / kCols * blocks * kCols, 0.0f);
    for (int64_t c0 = 0; c0 < h.dv_pad; c0 += kCols) column_max_kernel(h.vf_slab(c0), h.n, h.vf_max.data() + c0 * blocks);
  }
  if (!h.float_values && h.n > 0) {
    const int64_t blocks = (h.n + kMaxChunk - 1) / kMaxChunk;
    h.v_max.assign(h.dv_pad / kCols * blocks * kCols, 0.0);
    for (int64_t c0 = 0; c0 < h.dv_pad; c0 += kCols) column_max_kernel_d(h.v_slab(c0), h.n, h.v_max.data() + c0 * blocks);
  }
  for (double s : col) h.inputs_finite = h.inputs_finite && s * kDomainMargin < half_compute;
  return h;
}

namespace {

// The exact value in double (FastBlock's Exact, fast_block.h): the logits as
// logits_mixed_kernel formed them, the vectorised exp, plain sums; the oracle's own
// error is double's (u, gamma(D + 3), kVectorExpUlps).
class DoubleExact {
 public:
  static constexpr bool kFloatBound = true;
  static constexpr bool kValuesFromDouble = true;   // values divides the double sums by the total

  DoubleExact(const Problem& p, const HeadKeys& h, int64_t)
      : h_(h), n16_(h.n16), D_(p.shape.head_dim), scale_(p.effective_scale()), orc_(oracle_arithmetic<double>(kVectorExpUlps)),
        g_or_(gamma(static_cast<double>(p.shape.head_dim) + 3, orc_.u)) {}

  void logits(BlockScratch& b, int64_t tiles) {
    if (h_.float_keys)
      logits_float_kernel(b.qb.data(), b.aqbf.data(), h_.ktf.data(), D_, n16_, tiles, b.dot.data(), b.absd.data());
    else
      logits_mixed_kernel(b.qb.data(), b.aqbf.data(), h_.kt.data(), h_.akt.data(), D_, n16_, tiles, b.dot.data(),
                          b.absd.data());
  }

  void weights(int64_t r, BlockScratch& b, int64_t n8, RowLogits& lg, double& m, double& total) {
    double* dot = &b.dot[r * n16_];
    double* x = &b.x[r * n16_];
    double* w = &b.w[r * n16_];
    const double* vis = &b.vis[r * n16_];
    m = scale_logits_kernel(dot, &b.absd[r * n16_], vis, scale_, n8);  // dot: s_j, absd: a_j
    if (lg.tr.any()) {  // the v2 chain in double, in place: dot becomes z_j
      m = -kInf;
      for (int64_t j = 0; j < n8; ++j) {
        if (!(vis[j] > 0)) {
          lg.x_dt[j] = lg.x_or[j] = 0;
          continue;
        }
        const LogitChain<double> ch = logit_chain<double>(lg.tr, j, dot[j]);
        dot[j] = ch.z;
        lg.x_dt[j] = transform_error(lg.dt, lg.tr, ch);
        lg.x_or[j] = transform_error(orc_, lg.tr, ch);
        m = std::max(m, ch.z);
      }
    }
    if (lg.sink) m = std::max(m, lg.s);
    total = exp_weights(dot, vis, m, x, w, n8);
    if (lg.sink) {
      lg.w_sink = std::exp(lg.s - m);
      total += lg.w_sink;
    }
  }

  void clear(int64_t) {}

  void values(int64_t, const BlockScratch&, int64_t, const RowPlan* plan, const double*, double* out) const {
    for (int r = 0; r < kRows; ++r)
      for (int l = 0; l < kCols; ++l) out[r * kCols + l] /= plan[r].total;
  }
  double values_error(int64_t) const { return 0.0; }  // all in accumulation()'s

  LogitErrorTerms oracle_terms(int64_t, double) const { return {g_or_, orc_.u, orc_.exp_ulps * orc_.u, 0.0, 0.0, 0.0}; }
  double accumulation(double n) const { return oracle_accumulation_coefficient(orc_, n); }
  double floor(double) const { return 0; }

  static void careful(const Problem& p, int64_t bh, int64_t i, OracleResult& o) { careful_row<double>(p, bh, i, o); }

 private:
  const HeadKeys& h_;
  int64_t n16_, D_;
  double scale_;
  Arithmetic orc_;
  double g_or_;
};

}  // namespace

void fast_head(const Problem& p, int64_t bh, OracleResult& o) {
  const Shape& sh = p.shape;
  // About what one block of rows costs: the logits and the bound's sums over V.
  fast_head_with<DoubleExact>(p, bh, o, 12.0 * kRows * static_cast<double>(sh.kv_len * (sh.head_dim + sh.value_dim)));
}

}  // namespace attncheck::oracle_detail
