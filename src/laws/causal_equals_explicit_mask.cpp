// causal_equals_explicit_mask: a causal rule gives the same output as passing
// that rule as an explicit mask (ANDed with any mask the problem has), for
// both alignments: top_left (j <= i) and bottom_right (j <= i + kv_len - q_len).
// The two differ only when q_len != kv_len, which the generator often draws.
//
// Catches: the two alignments swapped or one used for both, a causal boundary
// off by one, the causal flag ignored, a causal flag that replaces the mask
// instead of combining with it, a fast causal path (tile skipping) that
// disagrees with the general masked path. Cannot catch: a fault both paths
// share (the same wrong softmax), or a mask semantics inverted in both.
#include <sstream>

#include "law_framework/law_support.h"
#include "problem/transforms.h"

namespace attncheck {

Law law_causal_equals_explicit_mask() {
  Law law;
  law.name = "causal_equals_explicit_mask";
  law.statement = "each causal rule (top_left, bottom_right) gives the same output as that rule passed as a mask";
  law.check = [](Implementation& impl, const Problem& base) {
    const Shape& s = base.shape;
    for (Causal rule : {Causal::top_left, Causal::bottom_right}) {
      Problem by_rule = base;
      by_rule.causal = rule;
      const Problem by_mask = with_causal_as_mask(by_rule);

      std::vector<double> a, b;
      if (auto bad = run_for(impl, by_rule, a)) return *bad;
      if (auto bad = run_for(impl, by_mask, b)) return *bad;
      const OracleResult oa = oracle(by_rule), ob = oracle(by_mask);
      if (auto m = mismatch(by_rule, a, oa.bound, b, ob.bound, "with the rule", "with the mask")) {
        std::ostringstream os;
        os << "causal " << causal_name(rule) << " (q_len=" << s.q_len << ", kv_len=" << s.kv_len
           << ") differs from the same rule as an explicit mask: " << *m;
        return Verdict::fail(os.str()).on({{"with the rule", "", by_rule},
                                           {"with the mask", "the call with the rule with it given as a mask instead", by_mask}});
      }
    }
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
