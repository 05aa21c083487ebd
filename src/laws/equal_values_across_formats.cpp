// equal_values_across_formats (ABI v3, "Stored formats of K and V" and "Laws version 3 makes
// possible"): the same real values stored two ways agree within the bound. For each side of
// the case stored in a format with a partner (law_framework/format_twins.h,
// same_values_other_format): INT4 codes as INT8 (same scales), INT8 as Q8_0 with every d = the
// row's INT8 scale (a normal binary16, one per (batch, kv head) or coarser), F16 keys of an F32
// call as F32. Each pair decodes to identical doubles (docs/kv-formats.md, point 2), so the
// two calls have the same oracle; they must agree within the sum of their bounds, with no
// NaN in one only. A pair whose partner format the implementation does not offer is not
// judged (an implementation offering no pair is skipped with that reason, Law::formats_needed);
// a case with no judged pair is not applicable. When the calls disagree, the message
// names the layout fault (law_framework/kv_layout_faults.h) that explains either output:
// nibbles read as halves or as pairs, FNUZ, an ignored scale.
//
// Catches: INT4's nibbles read as halves (Q4_0's layout) or Q4_0's as pairs where the
// partner is right, one path of a kernel ignoring a scale that the other applies, an F16
// cache read through a path that rounds further. Cannot catch: a fault both formats of a pair
// share (an ignored V scale read the same way by INT4 and INT8: quantized_matches_oracle sees
// it), a fault within the bound, or e4m3's FNUZ reading and Q4_0's order, which have no
// partner here (quantized_matches_oracle judges them against the oracle).
#include <sstream>

#include "law_framework/format_twins.h"
#include "problem/kv_numerics.h"
#include "law_framework/kv_layout_faults.h"
#include "law_framework/law_support.h"
#include "law_framework/packed_calls.h"

namespace attncheck {

Law law_equal_values_across_formats() {
  Law law;
  law.name = "equal_values_across_formats";
  law.statement = "the same real K and V values stored in two formats (int4 and int8, int8 and q8_0, f16 and f32) "
                  "agree within the bound";
  law.features = (kAllFeatures & ~ATTNCHECK_FEATURE_STRIDES) | kKvFormatsFeature;
  law.required = kKvFormatsFeature;
  // Head dims that Q8_0 fits (so INT8 finds its partner), no F64 (DTYPE storage only).
  law.tailor = [](GenOptions& g) {
    g.head_dims = {32};
    g.same_dims = true;
    // Up to three calls a case: the case and each side's twin.
    g.case_calls = 3;
    std::vector<DType> stored;
    for (DType t : g.dtypes)
      if (t != DType::f64) stored.push_back(t);
    if (!stored.empty()) g.dtypes = stored;
  };
  // Judged only for an implementation that offers a pair (F16's partner, F32, is the dtype).
  law.formats_needed = [](uint32_t offered) {
    auto has = [&](KvFormat f) { return (offered & (1u << static_cast<int>(f))) != 0; };
    if ((has(KvFormat::int4) && has(KvFormat::int8)) || (has(KvFormat::int8) && has(KvFormat::q8_0)) ||
        has(KvFormat::f16))
      return std::string();
    return std::string("a pair of formats that hold the same values (int4 and int8, int8 and q8_0, or f16)");
  };
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.kv_formatted()) return Verdict::not_applicable("K and V stored in the dtype");
    bool any_row = false;
    for (int64_t b = 0; b < p.shape.batch; ++b) any_row = any_row || p.q_len_of(b) > 0;
    if (!any_row) return Verdict::not_applicable("every sequence has 0 query rows");
    std::optional<Outcome> drawn;
    std::optional<OracleResult> drawn_oracle;
    std::vector<int64_t> same(static_cast<std::size_t>(p.shape.batch));
    for (int64_t b = 0; b < p.shape.batch; ++b) same[static_cast<std::size_t>(b)] = b;
    bool judged = false;
    for (const bool is_k : {true, false}) {
      std::optional<FormatTwin> twin = same_values_other_format(p, is_k, impl.kv_formats());
      if (!twin) continue;
      // The declared numerics that apply to the twin's call (INT8 keys as Q8_0: q may be rounded
      // there; problem/kv_numerics.h). q keeps their precondition: the generator saw to it.
      twin->problem.numerics = numerics_that_apply(twin->problem, impl.numerics()) & kJudgedNumerics;
      if (!drawn) {
        drawn = impl.run(p);
        if (auto bad = unusable(*drawn)) return *bad;
        drawn_oracle = oracle(p);
      }
      const Outcome other = impl.run(twin->problem);
      if (auto bad = unusable(other)) return *bad;
      const OracleResult o = oracle(twin->problem);
      judged = true;
      if (auto m = rows_differ({p, *drawn, *drawn_oracle, "as drawn"}, {twin->problem, other, o, "in the other format"},
                               same, false)) {
        std::ostringstream os;
        os << (is_k ? "K" : "V") << " stored as " << kv_format_name(is_k ? p.k_format : p.v_format) << " and as "
           << kv_format_name(is_k ? twin->problem.k_format : twin->problem.v_format)
           << " (the same real values) disagree beyond the bounds: " << *m;
        // The layout fault that explains one of the two outputs, if one does.
        if (std::string why = explain_kv_layout_fault(p, drawn->out); !why.empty())
          os << "; as drawn: " << why;
        else if (std::string why2 = explain_kv_layout_fault(twin->problem, other.out); !why2.empty())
          os << "; in the other format: " << why2;
        return Verdict::fail(os.str()).on({{"as drawn", "the case itself", p}, {"in the other format", twin->how, twin->problem}});
      }
    }
    if (!judged)
      return Verdict::not_applicable(
          "no side stored in a format whose partner (int4/int8, int8/q8_0, f16/f32) the implementation offers");
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
