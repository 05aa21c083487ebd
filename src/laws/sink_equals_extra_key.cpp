// sink_equals_extra_key: a sink s of head h is one more key whose logit is s
// and whose value is zero: it takes weight from every row and adds nothing.
// The extra key is appended at the end with k = 0, v = 0 and bias s, where a
// key moves nothing else: problems with no causal rule, window, lengths or
// ALiBi (the generator draws none for this law).
//
// Catches: sinks ignored, a sink scaled or soft-capped like a logit, a sink
// added to the numerator, sinks indexed by kv head. Cannot catch: a fault the
// bias path shares.
#include "law_framework/equivalent_calls.h"
#include "problem/feature_transforms.h"

namespace attncheck {

Law law_sink_equals_extra_key() {
  Law law;
  law.name = "sink_equals_extra_key";
  law.statement = "a sink equals one more key whose logit is the sink and whose value is zero";
  law.features = kAllFeatures & ~(ATTNCHECK_FEATURE_CAUSAL | ATTNCHECK_FEATURE_WINDOW | ATTNCHECK_FEATURE_LENGTHS |
                                  ATTNCHECK_FEATURE_ALIBI);
  law.required = ATTNCHECK_FEATURE_SINKS | ATTNCHECK_FEATURE_BIAS;
  law.tailor = [](GenOptions& g) { g.causal = false; };
  law.check = [](Implementation& impl, const Problem& p) {
    const std::optional<Problem> key = with_sink_as_key(p);
    if (!key) return Verdict::not_applicable("no sinks, or a sink not exact in the dtype, or positions that move");
    return equivalent_calls(impl, p, *key, "sink", "extra key");
  };
  return law;
}

}  // namespace attncheck
