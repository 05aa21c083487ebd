// gqa_equals_repeated_kv: a grouped-query call (kv_heads < heads) equals the
// same call with each kv head repeated for the query heads that read it
// (kv_heads = heads), within each one's bound.
//
// Catches: a query head reading kv head h % kv_heads (or h * kv_heads / heads
// rounded the other way), a kv stride of heads rows instead of kv_heads, the
// group size taken as kv_heads. Cannot catch: a fault that repeated heads
// share (a wrong scale): the other laws see those.
#include "law_framework/equivalent_calls.h"
#include "problem/transforms.h"

namespace attncheck {

Law law_gqa_equals_repeated_kv() {
  Law law;
  law.name = "gqa_equals_repeated_kv";
  law.statement = "a grouped-query call equals the call with each K and V head repeated for its query heads";
  law.features = kAllFeatures;
  law.required = ATTNCHECK_FEATURE_GQA;
  law.check = [](Implementation& impl, const Problem& p) {
    if (p.shape.kv_head_count() == p.shape.heads) return Verdict::not_applicable("kv_heads == heads");
    return equivalent_calls(impl, p, with_kv_repeated(p), "grouped", "repeated");
  };
  return law;
}

}  // namespace attncheck
