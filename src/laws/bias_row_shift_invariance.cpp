// bias_row_shift_invariance: softmax is invariant to a constant added to one
// row's logits, so adding a constant to every bias entry of a row changes
// nothing (without sinks, whose fixed logit breaks the invariance).
//
// Catches: a bias read with the wrong row stride or broadcast (the shifted
// bias is stored per row), a bias added after the softmax, a bias clamped or
// saturated. Cannot catch: a bias ignored altogether (matches_oracle does).
#include "law_framework/equivalent_calls.h"
#include "problem/feature_transforms.h"

namespace attncheck {

Law law_bias_row_shift_invariance() {
  Law law;
  law.name = "bias_row_shift_invariance";
  law.statement = "adding a constant to every bias entry of a row leaves the output unchanged";
  law.features = kAllFeatures & ~ATTNCHECK_FEATURE_SINKS;
  law.required = ATTNCHECK_FEATURE_BIAS;
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.has_bias()) return Verdict::not_applicable("no bias");
    for (double c : {4.0, 1.0, 0.25, 0.0625}) {
      if (std::optional<Problem> shifted = with_row_bias_shifted(p, c))
        return equivalent_calls(impl, p, *shifted, "bias", "bias + constant");
    }
    return Verdict::not_applicable("no constant shifts every bias entry exactly in the dtype");
  };
  return law;
}

}  // namespace attncheck
