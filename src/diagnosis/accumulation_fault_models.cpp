// The precision faults: attention computed right but summed in a narrower
// type than the dtype allows. Emulated as the other fault models emulate
// theirs: every row in long double, with the narrow type's rounding applied
// where such a kernel rounds, and the correct oracle's bound around it.
//
// A kernel that keeps `_Float16 sum, acc` (the example plugin with its
// accumulators narrowed) rounds after every add; kernels differ in whether
// the softmax sum is narrow too and whether they normalise each term or the
// total. The prediction is the hull of those four variants (midpoint, half
// its width added to the bound): each is what a faithful f16-accumulating
// kernel gives, and together they stay within a few f16 roundings of each
// other, far tighter than the error the accumulation itself makes over
// many keys.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "diagnosis/fault_models.h"
#include "diagnosis/oracle_predictions.h"
#include "problem/transforms.h"

namespace attncheck {

namespace {

using LD = long double;

// x rounded to f16 (IEEE binary16: 11 significant bits, subnormals in steps
// of 2^-24, ties to even, overflow to infinity from 65520 on) once, as C
// converts a double to _Float16 (`_Float16 acc; acc += w * v;`). Inline: the
// model rounds after every add of every row. (round_to(DType::f16, x) goes
// through float and so rounds twice: 5370.00023 gives 5368, not 5372, at
// about 1 in 40000 random values.)
double to_f16(double x) {
  const double a = std::abs(x);
  if (!(a < 65520.0)) return std::isnan(x) ? x : std::copysign(std::numeric_limits<double>::infinity(), x);
  if (a < 0x1p-14) return std::nearbyint(x * 0x1p24) * 0x1p-24;  // subnormal: a fixed quantum
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  return std::ldexp(std::nearbyint(std::ldexp(x, 11 - e)), e - 11);
}

// The running sums of one row's value column in f16, key by key in order
// (w [kv_len]: the unnormalised weights exp(s_j - top) of the keys the row
// sees, `seen` [kv_len]; v_col(j) the value): acc += w_j / sum * v_j for each
// sum in `sums` (the softmax sum in f16, and exact), and acc += w_j * v_j
// divided by each at the end. Four outputs, in that order.
template <class ValueOf>
std::array<double, 4> f16_column_outputs(const std::vector<double>& w, const std::vector<char>& seen,
                                         const std::array<double, 2>& sums, ValueOf v_col) {
  double each_narrow = 0, each_exact = 0, total = 0;
  for (std::size_t j = 0; j < w.size(); ++j) {
    if (!seen[j]) continue;
    const double v = v_col(j);
    each_narrow = to_f16(each_narrow + w[j] / sums[0] * v);
    each_exact = to_f16(each_exact + w[j] / sums[1] * v);
    total = to_f16(total + w[j] * v);
  }
  return {each_narrow, each_exact, total / sums[0], total / sums[1]};
}

// out [b][h][q_len][value_dim] and the lse [b][h][q_len] of a kernel whose
// softmax sum and weighted sum of V are f16 running sums (see above).
std::optional<Prediction> accumulates_in_f16(const Problem& p) {
  Prediction pr = by_oracle(p);
  const Shape& s = p.shape;
  std::vector<LD> logit(static_cast<std::size_t>(s.kv_len));
  std::vector<double> w(static_cast<std::size_t>(s.kv_len));
  std::vector<char> seen(static_cast<std::size_t>(s.kv_len));
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      if (!p.row_exists(bh, i) || !p.row_sees_any_key(bh, i)) continue;  // zeros, as by_oracle has them
      const LD sink = p.sink_of(bh);
      LD top = sink;
      for (int64_t j = 0; j < s.kv_len; ++j) {
        seen[j] = p.visible(bh, i, j);
        if (seen[j]) top = std::max(top, logit[j] = exact_logit(p, bh, i, j));
      }
      // The softmax sum in f16 and exact (the sink's weight first).
      const double sink_w = std::isinf(sink) ? 0 : static_cast<double>(std::exp(sink - top));
      std::array<double, 2> sums{to_f16(sink_w), sink_w};
      LD exact_sum = sink_w;
      for (int64_t j = 0; j < s.kv_len; ++j) {
        w[j] = seen[j] ? static_cast<double>(std::exp(logit[j] - top)) : 0;
        if (!seen[j]) continue;
        sums[0] = to_f16(sums[0] + w[j]);
        exact_sum += w[j];
      }
      sums[1] = static_cast<double>(exact_sum);
      const int64_t kv = p.kv_of(bh);
      for (int64_t c = 0; c < s.value_dim; ++c) {
        const auto v_col = [&](std::size_t j) { return p.v[p.v_at(kv, static_cast<int64_t>(j), c)]; };
        std::array<double, 4> got = f16_column_outputs(w, seen, sums, v_col);
        for (double& x : got) x = round_to(p.dtype, x);  // stored in the dtype, the kernel's last step
        const int64_t at = p.out_at(bh, i, c);
        const auto [lo, hi] = std::minmax_element(got.begin(), got.end());
        const bool all_finite = std::all_of(got.begin(), got.end(), [](double x) { return std::isfinite(x); });
        if (!all_finite) {
          // An f16 partial overflowed: the same infinity in every variant is a
          // prediction; else (inf - inf = NaN, or variants apart) what the
          // kernel gives depends on its order, and the element is free.
          const bool same = std::all_of(got.begin(), got.end(), [&](double x) { return x == got[0]; });
          pr.out[at] = got[0];
          pr.bound[at] = same ? 0 : std::numeric_limits<double>::quiet_NaN();
          continue;
        }
        pr.out[at] = (*lo + *hi) / 2;
        pr.bound[at] += (*hi - *lo) / 2;
      }
      // The lse from the sum in f16 or exact (the hull, as for out).
      if (pr.lse.empty()) continue;
      const LD a = top + std::log(static_cast<LD>(sums[1])), b = top + std::log(static_cast<LD>(sums[0]));
      const int64_t row = bh * s.q_len + i;
      pr.lse[row] = static_cast<double>((a + b) / 2);
      pr.lse_bound[row] += static_cast<double>(std::abs(a - b) / 2);
    }
  return pr;
}

}  // namespace

const std::vector<FaultModel>& accumulation_fault_models() {
  static const std::vector<FaultModel> models = {
      {"accumulates in 16-bit (the softmax sum and the weighted sum of V rounded to f16 after every add)",
       accumulates_in_f16},
  };
  return models;
}

}  // namespace attncheck
