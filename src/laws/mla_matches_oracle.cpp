// mla_matches_oracle (ABI v3, "V as a view of K"; "MLA"): a call whose v is k's first
// value_dim channels (v.data == k.data, v's strides k's; padded, packed or paged keys, the
// pool and table shared) gives every output element within the oracle's bound over those
// values (K and V sharing K's stored format and scale when the implementation offers formats,
// padded keys). About one case in ten is DeepSeek's MLA shape (one kv head, head_dim 576 =
// 512 latent + 64 rope channels, value_dim 512, scale 1/sqrt(192); gen/v_view_draws.h);
// the others draw every other v2 feature with value_dim below head_dim most of the time.
// Rows outside the representable domain or that see no key are not judged; a case with no
// judged row is not applicable, never a pass.
//
// A law of its own rather than matches_oracle drawing the view: matches_oracle's draws stay
// what they were, and an MLA-only kernel (one that answers ATTNCHECK_UNSUPPORTED to every
// call that is not a view) is judged here on every case rather than on none.
//
// Catches: V's rows stepped by value_dim instead of k's stride (ik_llama.cpp#2031: right for
// the first key, drifting after), V read from a separate v buffer that the view form leaves
// aliasing k's rope channels, V's channels taken from the end of k's row (the rope part), V's
// blocks or scales not shared with K's (a q8_0 row of 576 channels is 18 blocks, V its first 16), a
// kernel that copies K before reading V from the same memory and mis-sizes the copy. Cannot
// catch: a fault only the copied form has (v_view_equals_copy compares them), a fault within
// the bound, or one that shows only at a shape never drawn (576-wide cases are kept small:
// at most 2,048 query-key pairs).
#include <sstream>

#include "law_framework/law_support.h"
#include "problem/number_text.h"

namespace attncheck {

Law law_mla_matches_oracle() {
  Law law;
  law.name = "mla_matches_oracle";
  law.statement = "with v a view of k's first value_dim channels, every output element is within the oracle's bound";
  // Padded, packed or paged keys, every v2 feature; K (and so V) in a format the implementation offers.
  law.features = kAllFeatures | kPackedFeature | kPagedFeature | kKvFormatsFeature | kVViewFeature;
  law.required = kVViewFeature;
  // One call of the case (and the oracle's): the work cap's whole share, as matches_oracle.
  law.tailor = [](GenOptions& g) { g.case_calls = 1; };
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.v_view_of_k) return Verdict::not_applicable("v is not a view of k");
    CheckedRun run;
    if (auto bad = run_with_oracle(impl, p, run)) return *bad;
    const std::vector<double>& out = run.out;
    const OracleResult& o = run.oracle;
    const Comparison c = compare_to_oracle(p, o, out);
    if (c.judged == 0) return Verdict::not_applicable("no row is inside the representable domain and sees a key");
    if (c.ok) return Verdict::pass();
    const int64_t k = c.worst_index;
    std::ostringstream m;
    m << "v as k's first " << p.shape.value_dim << " of " << p.shape.head_dim << " channels: " << c.violations
      << " element(s) outside the bound; worst " << output_element(p, k) << ": "
      << compared_values("got", out[k], "oracle", o.exact[k], p.dtype) << "; error "
      << num(std::abs(out[k] - o.exact[k])) << " is " << num(c.worst_ratio) << "x the bound " << num(o.bound[k]);
    return Verdict::fail(m.str());
  };
  return law;
}

}  // namespace attncheck
