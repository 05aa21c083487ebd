// grad_matches_oracle: every element of dq, dk and dv lies within the derived
// error bound of the gradient oracle (oracle/grad_oracle.h, docs/tolerance.md
// "Gradients"). Padding, rows outside the representable domain (and the kv
// heads they read), dq of rows that see no key and dk/dv of keys nobody sees
// are not judged by the bound (grad_empty_rows_zero judges those zeros); a
// case with nothing judged is not applicable, never a pass.
//
// Catches: every backward fault that moves a gradient past its bound (a
// missing rowsum term, an unscaled dq, GQA gradients from one head, dV from
// unnormalised weights, a dropped soft-cap derivative, stale or NaN gradients)
// and precision losses beyond what the dtype's arithmetic explains.
// Cannot catch: faults below the bound, and what the bound does not judge.
#include "law_framework/grad_support.h"
#include "oracle/grad_oracle.h"

namespace attncheck {

Law law_grad_matches_oracle() {
  Law law;
  law.name = "grad_matches_oracle";
  law.statement = "every element of dq, dk and dv is within the derived error bound of the gradient oracle";
  law.features = kEveryFeature;
  law.required = kBackwardFeature;
  law.check = [](Implementation& impl, const Problem& drawn) {
    const Problem p = backward_of(drawn);
    Outcome o;
    if (auto bad = run_backward(impl, p, o)) return *bad;
    const GradComparison c = compare_grads_to_oracle(p, grad_oracle(p), o);
    if (c.judged() == 0)
      return Verdict::not_applicable("no gradient element is inside the representable domain and judged by the bound");
    if (c.ok()) return Verdict::pass();
    return Verdict::fail(c.message());
  };
  return law;
}

}  // namespace attncheck
