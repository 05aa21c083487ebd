// lse_matches_oracle: the log-sum-exp an implementation returns,
// log(exp(sink) + sum over visible keys of exp(z_j)) in natural log, lies
// within the derived bound of the oracle's (docs/tolerance.md, "Version 2").
// A row that sees no key must give the sink, or -inf without sinks, exactly.
//
// Catches: lse in base 2 (or log10), the max subtraction not added back, the
// sink left out of (or counted twice in) the sum, the scale or soft-cap
// applied differently from the output's logits, -inf / +inf conventions for
// empty rows. Cannot catch: an lse consistent with a wrong output
// (matches_oracle judges that).
#include <sstream>

#include "law_framework/law_support.h"
#include "problem/number_text.h"

namespace attncheck {

Law law_lse_matches_oracle() {
  Law law;
  law.name = "lse_matches_oracle";
  // The work cap of its cases (GenOptions::case_calls): one call of the case (and the oracle's): the long rows' whole work cap.
  law.tailor = [](GenOptions& g) { g.case_calls = 1; };
  law.statement = "the returned log-sum-exp is within the derived error bound of the oracle's";
  law.features = kAllFeatures | kPagedFeature;  // paged keys too (ABI v3)
  law.required = ATTNCHECK_FEATURE_LSE;
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.lse_requested) return Verdict::not_applicable("the call asks for no lse");
    const Outcome o = impl.run(p);
    if (auto bad = unusable(o)) return *bad;
    OracleResult r = oracle(p);
    judge_empty_rows_as_zeros(r);
    const Comparison c = compare_lse_to_oracle(p, r, o.lse);
    if (c.judged == 0) return Verdict::not_applicable("no row of the lse is judged");
    if (c.ok) return Verdict::pass();
    const int64_t k = c.worst_index, bh = k / p.shape.q_len, i = k % p.shape.q_len;
    std::ostringstream m;
    // The lse is returned in f32 whatever the dtype (ABI v2).
    m << c.violations << " lse value(s) outside the bound; worst " << output_row(p, bh, i) << ": "
      << compared_values("got", o.lse[k], "oracle", r.lse_exact[k], DType::f32, r.lse_bound[k]);
    return Verdict::fail(m.str());
  };
  return law;
}

}  // namespace attncheck
