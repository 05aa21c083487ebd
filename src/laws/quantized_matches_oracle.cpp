// quantized_matches_oracle (ABI v3, "Stored formats of K and V"): a call whose K or V is
// stored in a format other than the dtype (fp8 with scales, int8, int4, f16/bf16 under an f32
// query, ggml's q8_0 and q4_0 blocks; K and V mixed, every scale granularity) gives every
// output element within the oracle's bound over the REAL keys and values (each code times its
// scale or block d, exact in binary64), the bound of the call's dtype plus one rounding of
// each real K and V element and the scales applied after the dot product (docs/tolerance.md,
// "Stored K and V formats"). Rows outside the representable domain or that see no key are not
// judged; a case with no judged row is not applicable. A failure names the layout fault that
// explains it when one does (law_framework/kv_layout_faults.h: scales ignored, Q4_0's nibbles
// read as pairs, INT4's as halves, e4m3 read as FNUZ): the output is then within the bound of
// attention over the values so read.
//
// A law of its own rather than matches_oracle drawing formats: matches_oracle's draws (and so
// every earlier seed's cases of an implementation that declares KV_FORMATS) stay what they
// were, and the report says apart whether the quantized calls were judged.
//
// Catches: an ignored scale (flashinfer#4979: ragged prefill without k_scale/v_scale, output
// about 7.5 times too large), a per-(batch, kv head) scale indexed by query head, Q4_0's
// nibbles read as pairs or INT4's as halves, e4m3 decoded as FNUZ (half the value), subnormal
// codes lost, a negative or subnormal block d mishandled, q8_0's -128 clamped. Cannot catch: a
// fault no drawn value exposes (a code the case never holds), nor one within the bound (a
// kernel rounding K and V once more than allowed on small values); the declared numerics
// (KV_PRECISION, Q_AS_Q8_0) are not judged yet: such a declaration is reported not checked.
#include <sstream>

#include "law_framework/kv_layout_faults.h"
#include "law_framework/law_support.h"
#include "problem/number_text.h"

namespace attncheck {

Law law_quantized_matches_oracle() {
  Law law;
  law.name = "quantized_matches_oracle";
  law.statement = "with K and V stored in other formats, every output element is within the oracle's bound over "
                  "the real keys and values";
  // Stored formats need padded, dense k and v (problem.h): no strided views, no packing or
  // paging here; every other v2 feature combines.
  law.features = (kAllFeatures & ~ATTNCHECK_FEATURE_STRIDES) | kKvFormatsFeature;
  law.required = kKvFormatsFeature;
  // Head dims the blocks fit (32, 64) among small ones, value_dim = head_dim, so that Q8_0 and
  // Q4_0 (multiples of 32) and INT4 (even) are drawn as often as the rest.
  // F64 comes only with DTYPE storage: left out while another dtype is drawn.
  law.tailor = [](GenOptions& g) {
    g.head_dims = {2, 8, 32, 64};
    g.same_dims = true;
    std::vector<DType> stored;
    for (DType t : g.dtypes)
      if (t != DType::f64) stored.push_back(t);
    if (!stored.empty()) g.dtypes = stored;
  };
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.kv_formatted()) return Verdict::not_applicable("K and V stored in the dtype");
    CheckedRun run;
    if (auto bad = run_with_oracle(impl, p, run)) return *bad;
    const std::vector<double>& out = run.out;
    const OracleResult& o = run.oracle;
    const Comparison c = compare_to_oracle(p, o, out);
    if (c.judged == 0) return Verdict::not_applicable("no row is inside the representable domain and sees a key");
    if (c.ok) return Verdict::pass();
    const int64_t k = c.worst_index;
    std::ostringstream m;
    m << "K as " << kv_format_name(p.k_format) << ", V as " << kv_format_name(p.v_format) << ": " << c.violations
      << " element(s) outside the bound; worst " << output_element(p, k) << ": "
      << compared_values("got", out[k], "oracle", o.exact[k], p.dtype) << "; error "
      << num(std::abs(out[k] - o.exact[k])) << " is " << num(c.worst_ratio) << "x the bound " << num(o.bound[k]);
    // The layout fault that explains it, if one does (law_framework/kv_layout_faults.h).
    if (const std::string why = explain_kv_layout_fault(p, out); !why.empty()) m << "; " << why;
    return Verdict::fail(m.str());
  };
  return law;
}

}  // namespace attncheck
