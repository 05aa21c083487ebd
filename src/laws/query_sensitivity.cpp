// query_sensitivity (the founding law, founding-case.md): the output responds
// to a small change of the query as much as exact attention does, within a
// factor of two: every measurable row's r_impl / r_oracle (law_framework/query_response.h,
// the one definition of the measurement) satisfies 1/2 <= ratio <= 2. A correct
// implementation is off from each exact output by at most the oracle's bound,
// so |r_impl - r_oracle| <= ||bound(q)|| + ||bound(q + delta)||; rows are judged
// only when r_oracle is at least kMeasurable times that, which keeps a correct
// ratio within [0.9, 1.1]. Judged for head_dim >= 16 (below that a missing
// 1/sqrt(d) hardly matters, and shrinking would lose the story); tailored to the
// founding regime: unit Gaussians, no mask, no causal rule, default scale,
// head_dim 16..512.
//
// Catches: logits never scaled by 1/sqrt(d) (a saturated softmax ignores the
// query: ratio << 1/2, or >> 2 where the winner flips), scale 1/d (weights
// over-smoothed: ratio ~ 1/sqrt(d)), weights not from a softmax (the founding
// "fix" multiplies V by q: ratio far off), a query read from the wrong row or
// head. Cannot catch: faults that leave the logits' dependence on q intact
// (mask, causal, K/V handling faults that keep the response size), or any
// fault in rows where the exact response is below the dtype's noise.
#include <cmath>
#include <sstream>

#include "law_framework/law_support.h"
#include "law_framework/query_response.h"
#include "problem/number_text.h"

namespace attncheck {

namespace {

// Below this head_dim a missing 1/sqrt(d) barely changes the logits' spread;
// keeping the law to the regime also keeps shrunk counterexamples in it.
constexpr int64_t kMinHeadDim = 16;

}  // namespace

Law law_query_sensitivity() {
  Law law;
  law.name = "query_sensitivity";
  law.statement = "a small change of the query moves the output as much as in exact attention, within a factor of 2";
  law.cheap = false;
  law.tailor = [](GenOptions& g) {
    g.families = kGaussian;
    g.mask = false;
    g.causal = false;
    g.explicit_scale = false;
    g.min_head_dim = kMinHeadDim;
    g.max_head_dim = 512;
    g.min_q_len = 1;
    g.max_q_len = 4;
    g.min_kv_len = 2;
    g.max_kv_len = 64;
  };
  law.check = [](Implementation& impl, const Problem& p) {
    const Shape& s = p.shape;
    if (s.head_dim < kMinHeadDim)
      return Verdict::not_applicable("head_dim " + std::to_string(s.head_dim) + " is below the law's regime (>= 16)");
    std::vector<RowResponse> rows;
    if (auto bad = measure_query_response(impl, p, rows)) return *bad;

    int64_t measured = 0, worst_bh = -1, worst_i = -1;
    double worst_ratio = 1, worst_log = -1, worst_r_impl = 0, worst_r_oracle = 0, worst_exact_entropy = 0;
    for (const RowResponse& r : rows) {
      if (!r.measurable) continue;
      ++measured;
      const double ratio = r.ratio();
      const double off = std::isnan(ratio) ? INFINITY : std::abs(std::log(ratio));
      if (off > worst_log) {
        worst_log = off; worst_ratio = ratio; worst_bh = r.bh; worst_i = r.i;
        worst_r_impl = r.r_impl; worst_r_oracle = r.r_oracle; worst_exact_entropy = r.exact_entropy;
      }
    }
    if (measured == 0) return Verdict::not_applicable("no row's exact response rises above the dtype's noise");
    if (worst_ratio >= 0.5 && worst_ratio <= 2) return Verdict::pass();

    const double h_impl = weight_entropy(impl, p, worst_bh, worst_i);
    const double h_exact = worst_exact_entropy;
    std::ostringstream m;
    m << "row " << output_row(p, worst_bh, worst_i) << " responds to a query step of " << kQueryStep
      << "*|q| by " << num(worst_r_impl) << " where exact attention moves by " << num(worst_r_oracle)
      << ": ratio " << num(worst_ratio) << " (allowed 0.5..2) at head_dim=" << s.head_dim
      << "; entropy of its attention weights "
      << (std::isnan(h_impl) ? std::string("unreadable") : pair_text(h_impl, h_exact).a) << " nats vs exact "
      << (std::isnan(h_impl) ? num(h_exact) : pair_text(h_impl, h_exact).b) << " (uniform over " << s.kv_len << " keys: "
      << num(std::log(static_cast<double>(s.kv_len))) << ")";
    std::ostringstream step;
    step << "the case with each query row moved by " << kQueryStep << "*|q| in a direction drawn from the case";
    return Verdict::fail(m.str()).on({{"q", "", p}, {"q stepped", step.str(), query_stepped(p)}});
  };
  return law;
}

}  // namespace attncheck
