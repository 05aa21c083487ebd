// softcap_bounds_weights: with soft-cap c every logit lies in (-c, c), so the
// weights of one row differ by at most a factor exp(2c). Seen through
// V = identity (the output is the weight matrix; for a kernel that takes only
// its own value_dim, the identity's columns in blocks of that value_dim), every
// visible key's weight is at least the row's largest times exp(-2c), up to
// both weights' bounds.
// Problems carry no bias and no ALiBi here (they add beyond the cap). And a
// cap far above every logit vanishes: with c so large that c tanh(z / c)
// differs from z by under a hundredth of the bound's worth (|z|^3 / (3 c^2)),
// the call equals the call without a soft-cap.
//
// Catches: the cap ignored (then large logits give ratios far past exp(2c)),
// a cap of a different c, padding keys or masked keys let through (their
// weights escape the floor's row). Cannot catch: the cap applied after the
// bias (no bias here: bias_row_shift_invariance and alibi_equals_bias see
// that), nor a cap that binds correctly but is followed by a wrong softmax
// (matches_oracle does).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "law_framework/equivalent_calls.h"
#include "law_framework/law_support.h"
#include "problem/dtype.h"
#include "problem/number_text.h"

namespace attncheck {

namespace {

// The problem with a cap so large it changes the logits by a negligible part
// of the bound, against the problem with none.
Verdict vanishing_cap(Implementation& impl, const Problem& p) {
  Problem none = p;
  none.softcap = 0;
  const OracleResult o = oracle(none);
  double zmax = 0, vmax = 0, bmin = INFINITY;
  const Shape& s = p.shape;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i)
      for (int64_t j = 0; j < s.kv_len; ++j)
        if (p.visible(bh, i, j)) zmax = std::max(zmax, std::abs(static_cast<double>(exact_logit(none, bh, i, j))));
  for (double v : p.v) vmax = std::max(vmax, std::abs(v));
  for (double b : o.bound)
    if (b > 0 && std::isfinite(b)) bmin = std::min(bmin, b);
  if (!std::isfinite(bmin) || !std::isfinite(zmax) || !std::isfinite(vmax))
    return Verdict::pass();  // the floor was judged; nothing to compare here
  // A logit moves by at most |z|^3 / (3 c^2), an output by twice that times max |v|.
  const double c = std::max(1.0, std::sqrt(200 * zmax * zmax * zmax * std::max(vmax, 1e-300) / (3 * bmin)));
  // The cap must be a value the compute type holds, with room for c * tanh(z / c):
  // float kernels (f32, f16, bf16) take it as a float.
  const double cap_limit = info(info(p.dtype).compute).max_finite / 1024;
  if (!std::isfinite(c) || c > cap_limit) return Verdict::pass();
  Problem large = p;
  large.softcap = round_to(info(p.dtype).compute, c);
  return equivalent_calls(impl, large, none, "soft-cap far above every logit", "no soft-cap");
}

// The floor on the weights P [batch][heads][q_len][kv_len] that `p` (V =
// identity) reveals: every visible key's weight is at least the row's largest
// times exp(-2c), each weight up to its bound.
Verdict weights_above_floor(const Problem& p, const std::vector<double>& w) {
  const OracleResult o = oracle(p);
  const double floor_factor = std::exp(-2 * p.softcap);
  Tally tally;
  const Shape& s = p.shape;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      int64_t top = -1;
      for (int64_t j = 0; j < s.kv_len; ++j)
        if (p.visible(bh, i, j) && (top < 0 || w[p.out_at(bh, i, j)] > w[p.out_at(bh, i, top)])) top = j;
      if (top < 0 || !std::isfinite(o.bound[p.out_at(bh, i, top)])) continue;
      const double low = (w[p.out_at(bh, i, top)] - o.bound[p.out_at(bh, i, top)]) * floor_factor;
      for (int64_t j = 0; j < s.kv_len; ++j) {
        if (!p.visible(bh, i, j) || j == top) continue;
        const int64_t k = p.out_at(bh, i, j);
        tally.judge();
        // (1 - 1e-12): exp(-2c) in double, and the products, round.
        if (!(w[k] + o.bound[k] >= low * (1 - 1e-12))) tally.record_worst(k, low / std::max(w[k], 1e-300));
      }
    }
  if (auto v = tally.settled("no row has two visible keys inside the oracle's domain")) return *v;
  const int64_t k = tally.at;
  // A weight just below the floor: the digits that tell the two apart.
  const PairText t = pair_text(w[k], w[k] * tally.excess, p.dtype);
  std::ostringstream m;
  m << tally.violations << " weight(s) below the soft-cap's floor; worst " << output_element(p, k) << ": weight "
    << t.a << " where the row's largest times exp(-2 * " << num(p.softcap) << ") is at least " << t.b;
  return Verdict::fail(m.str());
}

}  // namespace

// The weights are read as the other weight laws read them (weights_law): V =
// identity, or, for a kernel that takes only its own value_dim (a grouped-query
// op with value_dim = head_dim), the same identity in blocks of that value_dim.
// Then, when the floor held, the vanishing cap on the case as drawn.
Law law_softcap_bounds_weights() {
  Law law = weights_law("softcap_bounds_weights",
                        "with soft-cap c, the weights of one row differ by at most a factor exp(2c); a huge cap equals none",
                        weights_above_floor);
  law.features = kAllFeatures & ~(ATTNCHECK_FEATURE_BIAS | ATTNCHECK_FEATURE_ALIBI);
  law.required = ATTNCHECK_FEATURE_SOFTCAP;
  law.check = [floor = std::move(law.check)](Implementation& impl, const Problem& given) {
    if (given.softcap <= 0) return Verdict::not_applicable("no soft-cap");
    Verdict v = floor(impl, given);
    if (!v.passed()) return v;
    return vanishing_cap(impl, given);
  };
  return law;
}

}  // namespace attncheck
