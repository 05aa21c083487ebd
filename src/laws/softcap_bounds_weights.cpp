// softcap_bounds_weights: with soft-cap c every logit lies in (-c, c), so the
// weights of one row differ by at most a factor exp(2c). Seen through
// V = identity (the output is the weight matrix), every visible key's weight
// is at least the row's largest times exp(-2c), up to both weights' bounds.
// Problems carry no bias and no ALiBi here (they add beyond the cap).
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

#include "laws/law_support.h"

namespace attncheck {

Law law_softcap_bounds_weights() {
  Law law;
  law.name = "softcap_bounds_weights";
  law.statement = "with soft-cap c, the weights of one row differ by at most a factor exp(2c)";
  law.features = kAllFeatures & ~(ATTNCHECK_FEATURE_BIAS | ATTNCHECK_FEATURE_ALIBI);
  law.required = ATTNCHECK_FEATURE_SOFTCAP;
  law.tailor = [](GenOptions& g) { g.max_kv_len = std::min(g.max_kv_len, kMaxIdentityKeys); };
  law.check = [](Implementation& impl, const Problem& given) {
    if (given.softcap <= 0) return Verdict::not_applicable("no soft-cap");
    if (given.shape.kv_len > kMaxIdentityKeys) return Verdict::not_applicable("kv_len above kMaxIdentityKeys");
    const Problem p = with_identity_values(given);
    std::vector<double> w;
    if (auto bad = run_for(impl, p, w)) return *bad;
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
    std::ostringstream m;
    m << tally.violations << " weight(s) below the soft-cap's floor; worst " << output_element(p, k) << ": weight "
      << num(w[k]) << " where the row's largest times exp(-2 * " << num(p.softcap) << ") is at least "
      << num(w[k] * tally.excess);
    return Verdict::fail(m.str());
  };
  return law;
}

}  // namespace attncheck
