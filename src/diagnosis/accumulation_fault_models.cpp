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
#include <cmath>
#include <limits>
#include <vector>

#include "diagnosis/fault_models.h"
#include "diagnosis/oracle_predictions.h"
#include "problem/transforms.h"

namespace attncheck {

namespace {

using LD = long double;

LD to_f16(LD x) { return static_cast<LD>(round_to(DType::f16, static_cast<double>(x))); }

// The running sums of one row in f16, key by key in order:
// w [kv_len] the unnormalised weights exp(s_j - top) (0 for unseen keys, which
// are never added), sink_w the sink's exp(sink - top) (0 without sinks),
// v_col(j) the value column. `narrow_sum`: the softmax sum in f16 too;
// `normalise_each`: acc += w_j / sum * v_j, else acc += w_j * v_j and acc / sum.
template <class ValueOf>
LD f16_row_output(const std::vector<LD>& w, const std::vector<char>& seen, LD sink_w, ValueOf v_col, bool narrow_sum,
                  bool normalise_each) {
  LD sum = narrow_sum ? to_f16(sink_w) : sink_w;
  for (std::size_t j = 0; j < w.size(); ++j)
    if (seen[j]) sum = narrow_sum ? to_f16(sum + w[j]) : sum + w[j];
  LD acc = 0;
  for (std::size_t j = 0; j < w.size(); ++j)
    if (seen[j]) acc = to_f16(acc + (normalise_each ? w[j] / sum : w[j]) * v_col(j));
  return normalise_each ? acc : acc / sum;
}

// out [b][h][q_len][value_dim] and the lse [b][h][q_len] of a kernel whose
// softmax sum and weighted sum of V are f16 running sums (see above).
std::optional<Prediction> accumulates_in_f16(const Problem& p) {
  Prediction pr = by_oracle(p);
  const Shape& s = p.shape;
  std::vector<LD> w(static_cast<std::size_t>(s.kv_len));
  std::vector<char> seen(static_cast<std::size_t>(s.kv_len));
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      if (!p.row_exists(bh, i) || !p.row_sees_any_key(bh, i)) continue;  // zeros, as by_oracle has them
      const LD sink = p.sink_of(bh);
      LD top = sink;
      for (int64_t j = 0; j < s.kv_len; ++j) {
        seen[j] = p.visible(bh, i, j);
        if (seen[j]) top = std::max(top, w[j] = exact_logit(p, bh, i, j));
      }
      for (int64_t j = 0; j < s.kv_len; ++j) w[j] = seen[j] ? std::exp(w[j] - top) : 0;
      const LD sink_w = std::isinf(sink) ? 0 : std::exp(sink - top);
      const int64_t kv = p.kv_of(bh);
      for (int64_t c = 0; c < s.value_dim; ++c) {
        const auto v_col = [&](std::size_t j) { return static_cast<LD>(p.v[p.v_at(kv, static_cast<int64_t>(j), c)]); };
        std::vector<LD> got;  // the four variants, each stored in the dtype as the kernel's last step
        for (bool narrow_sum : {true, false})
          for (bool normalise_each : {true, false})
            got.push_back(round_to(p.dtype, static_cast<double>(f16_row_output(w, seen, sink_w, v_col, narrow_sum,
                                                                              normalise_each))));
        const int64_t at = p.out_at(bh, i, c);
        const auto [lo, hi] = std::minmax_element(got.begin(), got.end());
        const bool all_finite = std::all_of(got.begin(), got.end(), [](LD x) { return std::isfinite(x); });
        if (!all_finite) {
          // An f16 partial overflowed: the same infinity in every variant is a
          // prediction; else (inf - inf = NaN, or variants apart) what the
          // kernel gives depends on its order, and the element is free.
          const bool same = std::all_of(got.begin(), got.end(), [&](LD x) { return x == got[0]; });
          pr.out[at] = static_cast<double>(got[0]);
          pr.bound[at] = same ? 0 : std::numeric_limits<double>::quiet_NaN();
          continue;
        }
        pr.out[at] = static_cast<double>((*lo + *hi) / 2);
        pr.bound[at] += static_cast<double>((*hi - *lo) / 2);
      }
      // The lse from the sum in f16 or exact (the hull, as for out).
      if (pr.lse.empty()) continue;
      LD exact_sum = sink_w, narrow_sum = to_f16(sink_w);
      for (int64_t j = 0; j < s.kv_len; ++j)
        if (seen[j]) exact_sum += w[j], narrow_sum = to_f16(narrow_sum + w[j]);
      const LD a = top + std::log(exact_sum), b = top + std::log(narrow_sum);
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
