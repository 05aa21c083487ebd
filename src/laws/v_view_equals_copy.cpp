// v_view_equals_copy (ABI v3, "V as a view of K"): for an implementation that accepts both
// forms, a call whose v is k's first value_dim channels and the same call with V copied to
// its own memory (the same values, v's own strides over value_dim; with paging its own pool
// under the same table) give the same out and lse: bit for bit when the implementation
// reruns the case bit for bit (docs/abi/plugin-abi-v3.md's comparison rule), else within the
// sum of the bounds. An implementation that refuses the copy (an MLA-only kernel) makes the
// case not applicable: mla_matches_oracle judges it.
//
// Catches: a kernel whose view path and copy path disagree (V's rows stepped by value_dim
// rather than k's stride, ik_llama.cpp#2031; a fast path taken when v.data == k.data that
// reads other channels or other keys; a view path that skips a rescale the other has).
// Cannot catch: a fault both forms share (mla_matches_oracle and matches_oracle judge those
// against the oracle), nor one within the bound of a kernel that does not rerun bit for bit.
#include "law_framework/law_support.h"
#include "law_framework/paged_calls.h"

namespace attncheck {

Law law_v_view_equals_copy() {
  Law law;
  law.name = "v_view_equals_copy";
  law.statement = "v as a view of k and the same values copied to their own memory give the same out and lse";
  law.features = kAllFeatures | kPackedFeature | kPagedFeature | kKvFormatsFeature | kVViewFeature;
  law.required = kVViewFeature;
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.v_view_of_k) return Verdict::not_applicable("v is not a view of k");
    Problem copied = p;
    copied.v_view_of_k = false;  // v holds the same values; the call gives it its own memory
    return compare_with_twins(impl, p, {{"with V copied", "the case with V copied to its own memory", copied}},
                              TwinRule::bitwise_if_rerun, "V as a view of K and V copied gave different results");
  };
  return law;
}

}  // namespace attncheck
