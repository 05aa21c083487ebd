// grad_gqa_sums_group: a grouped-query call (kv_heads < heads) is the call
// with each kv head repeated for its query heads, so its dq equals the
// repeated call's dq and its dk and dv equal the sums, over each group of
// query heads, of the repeated call's dk and dv; each call within its own
// rounding bound (oracle/grad_rounding.h), the repeated one's summed over the group.
//
// Catches: a group's dk/dv taken from its first query head (or its last)
// instead of the sum, a query head's gradient added to the wrong kv head
// (h % kv_heads), dk/dv of a group overwritten by each head in turn, a dq
// that reads the wrong kv head.
// Cannot catch: faults the repeated call shares (a missing rowsum term, a
// wrong scale): the other gradient laws see those.
#include <cmath>

#include "law_framework/grad_support.h"
#include "problem/transforms.h"

namespace attncheck {

Law law_grad_gqa_sums_group() {
  Law law;
  law.name = "grad_gqa_sums_group";
  law.statement = "a grouped call's dk and dv equal the group sums of the repeated-heads call's, its dq the same";
  law.features = kEveryFeature;
  law.required = kBackwardFeature | ATTNCHECK_FEATURE_GQA;
  law.check = [](Implementation& impl, const Problem& drawn) {
    const Problem p = backward_of(drawn);
    const Shape& s = p.shape;
    if (s.kv_head_count() == s.heads) return Verdict::not_applicable("kv_heads == heads");
    const Problem rep = with_kv_repeated(p);
    GradRun grouped, repeated;
    if (auto bad = run_backward_bounded(impl, p, grouped)) return *bad;
    if (auto bad = run_backward_bounded(impl, rep, repeated)) return *bad;
    // The repeated call's gradients summed over each group, in the grouped shapes.
    Outcome summed;
    GradBounds tol;
    summed.dq = repeated.outcome.dq;
    tol.dq = repeated.bounds.dq;
    for (GradTensor t : {GradTensor::dk, GradTensor::dv}) {
      const int64_t cols = t == GradTensor::dk ? s.head_dim : s.value_dim;
      std::vector<double>& g = grad_of(summed, t);
      std::vector<double>& e = t == GradTensor::dk ? tol.dk : tol.dv;
      g.assign(t == GradTensor::dk ? s.k_size() : s.v_size(), 0.0);
      e.assign(g.size(), 0.0);
      const std::vector<double>&from = grad_of(repeated.outcome, t), &from_bound = bound_of(repeated.bounds, t);
      for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
        for (int64_t j = 0; j < s.kv_len; ++j)
          for (int64_t c = 0; c < cols; ++c) {
            const int64_t to = (p.kv_of(bh) * s.kv_len + j) * cols + c, at = (bh * s.kv_len + j) * cols + c;
            g[to] += from[at];
            e[to] += from_bound[at] + (std::isfinite(from[at]) ? 0x1p-52 * std::abs(from[at]) : 0.0);
          }
    }
    int64_t judged = 0;
    if (auto m = grad_mismatch(p, grouped.outcome, grouped.bounds, summed, tol, "grouped",
                               "repeated, summed over the group", judged))
      return Verdict::fail(*m).on(
          {{"grouped", "", p}, {"repeated", "the case with each k and v head repeated for its query heads", rep}});
    if (judged == 0) return Verdict::not_applicable("no gradient element of the call is judged");
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
