// alibi_equals_bias: ALiBi (z -= slope[h] * |d_i - j|) equals the additive
// bias that holds the same term.
//
// Catches: the ALiBi sign flipped, the distance measured from the top-left
// (|i - j|) where the spec aligns it bottom-right, slopes indexed by kv head,
// the term added before the soft-cap. Cannot catch: a fault of the bias path
// that the ALiBi path shares.
#include "law_framework/equivalent_calls.h"
#include "problem/feature_transforms.h"

namespace attncheck {

Law law_alibi_equals_bias() {
  Law law;
  law.name = "alibi_equals_bias";
  law.statement = "ALiBi slopes equal the explicit bias -slope[h] * |d_i - j|";
  law.features = kAllFeatures;
  law.required = ATTNCHECK_FEATURE_ALIBI | ATTNCHECK_FEATURE_BIAS;
  law.check = [](Implementation& impl, const Problem& p) {
    if (p.alibi_slopes.empty()) return Verdict::not_applicable("no ALiBi slopes");
    return equivalent_calls(impl, p, with_alibi_as_bias(p), "ALiBi", "explicit bias");
  };
  return law;
}

}  // namespace attncheck
