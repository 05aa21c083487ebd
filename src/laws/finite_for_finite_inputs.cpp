// finite_for_finite_inputs: when every input is finite, every query row whose
// exact computation stays representable (oracle.h, row_in_finite_domain) gets
// a finite output: no NaN, no infinity.
//
// Catches: exp of unshifted logits overflowing (no max subtraction) and the
// inf / inf or 0 / 0 that follows; -inf - (-inf) for rows whose first tiles are
// all masked (streaming softmax); an intermediate kept in a narrower type than
// the arithmetic allows (f16/bf16 are computed and accumulated in f32, so a
// softmax sum or P.V accumulator kept in 16 bits that overflows, e.g. f16
// values summing past 65504); division by a zero sum for rows whose weights
// all underflow.
// Cannot catch: finite but wrong outputs (matches_oracle), or what a row
// outside the representable domain returns (nothing is promised there).
#include <cmath>
#include <sstream>

#include "law_framework/law_support.h"

namespace attncheck {

namespace {

bool all_finite(const std::vector<double>& t) {
  for (double x : t)
    if (!std::isfinite(x)) return false;
  return true;
}

}  // namespace

Law law_finite_for_finite_inputs() {
  Law law;
  law.name = "finite_for_finite_inputs";
  law.statement = "finite inputs give finite outputs in every row whose exact computation stays representable";
  // Lean towards the families that reach the edges of the range (wide
  // magnitudes, edge values, huge logits), keeping Gaussians for ordinary rows.
  law.tailor = [](GenOptions& g) {
    const unsigned extreme = g.families & (kGaussian | kWide | kEdge | kHugeLogits);
    if (extreme & (kWide | kEdge | kHugeLogits)) g.families = extreme;
  };
  law.check = [](Implementation& impl, const Problem& p) {
    if (!all_finite(p.q) || !all_finite(p.k) || !all_finite(p.v) || !std::isfinite(p.effective_scale()))
      return Verdict::not_applicable("an input is not finite");
    std::vector<double> out;
    if (auto bad = run_for(impl, p, out)) return *bad;
    const Shape& s = p.shape;
    Tally tally;
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = 0; i < s.q_len; ++i) {
        if (!row_in_finite_domain(p, bh, i)) continue;
        tally.judge();
        for (int64_t c = 0; c < s.value_dim; ++c)
          if (!std::isfinite(out[p.out_at(bh, i, c)])) tally.record_first(p.out_at(bh, i, c));
      }
    if (auto v = tally.settled("no row is inside the representable domain")) return *v;
    std::ostringstream m;
    m << tally.violations << " output element(s) not finite in rows inside the representable domain; first "
      << output_element(p, tally.at) << " = " << num(out[tally.at]);
    return Verdict::fail(m.str());
  };
  return law;
}

}  // namespace attncheck
