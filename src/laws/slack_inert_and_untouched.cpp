// slack_inert_and_untouched (ABI v3, "Packed batches"): the bytes of a packed
// call that belong to no live row (slack rows past cu[batch], and padding
// rows inside a slot past q_lens / kv_lens) change nothing: the case with 3
// more slack rows on each packed side (the call's slack is NaN) and every
// padding element NaN, then 1e30-class, gives bit for bit the case's out and
// lse when the implementation reruns the case bit for bit, else the same
// within the bounds. Output slack and padding keep their guard bytes on every
// call (the call's encoding guards them: a write there, zeros included, is an
// out_of_bounds_write, judged by no_out_of_bounds_write on this law's cases,
// which all have padding or slack).
//
// Catches: rows past cu[batch] read (FlashAttention PR #2324's NaN), padding
// keys of a slot attended (kv_lens ignored in a packed call), a kernel sized
// by total rather than cu[batch]. Cannot catch: a slack read that NaN or a
// huge value leaves without effect (multiplied by an exact 0 weight ...).
#include <cmath>

#include "law_framework/law_support.h"
#include "law_framework/packed_calls.h"
#include "problem/dtype.h"

namespace attncheck {

Law law_slack_inert_and_untouched() {
  Law law;
  law.name = "slack_inert_and_untouched";
  law.statement = "packed slack rows and padding change nothing when NaN or huge; output slack is never written";
  law.features = kAllFeatures | kPackedFeature;
  law.required = kPackedFeature;
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.packed()) return Verdict::not_applicable("not packed");
    const Outcome drawn = impl.run(p);
    if (auto bad = unusable(drawn)) return *bad;
    bool bitwise = false;
    if (auto bad = rerun_is_bitwise(impl, p, drawn, bitwise)) return *bad;
    const OracleResult o = oracle(p);
    std::vector<int64_t> same(static_cast<std::size_t>(p.shape.batch));
    for (int64_t b = 0; b < p.shape.batch; ++b) same[b] = b;
    const double huge = round_to(p.dtype, info(p.dtype).max_finite / 4);
    for (double fill : {std::numeric_limits<double>::quiet_NaN(), huge}) {
      const Problem refilled = with_slack_refilled(p, 3, fill);
      const Outcome again = impl.run(refilled);
      if (auto bad = unusable(again)) return *bad;
      const char* name = std::isnan(fill) ? "with NaN slack and padding" : "with huge slack and padding";
      if (auto m = rows_differ({p, drawn, o, "as drawn"}, {refilled, again, o, name}, same, bitwise))
        return Verdict::fail("slack or padding changed the result: " + *m)
            .on({{"as drawn", "", p},
                 {name, "the case with 3 more slack rows on each packed side and every padding element of q, k and v set to " +
                            num(fill), refilled}});
    }
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
