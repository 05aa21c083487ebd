// matches_oracle: every output element lies within the derived error bound of
// the high-precision oracle. Rows outside the representable domain (oracle.h,
// row_in_finite_domain) or that see no key are not judged; a case with no
// judged row is not applicable, never a pass. Where the typical-error model
// holds (oracle/typical_error.h) the verdict carries the case's accuracy: the
// grade beside the verdict (docs/tolerance.md, "The typical error").
#include <sstream>

#include "law_framework/law_support.h"
#include "oracle/typical_error.h"
#include "problem/number_text.h"

namespace attncheck {

Law law_matches_oracle() {
  Law law;
  law.name = "matches_oracle";
  // The work cap of its cases (GenOptions::case_calls): one call of the case (and the oracle's): the long rows' whole work cap.
  law.tailor = [](GenOptions& g) { g.case_calls = 1; };
  law.statement = "every output element is within the derived error bound of the high-precision oracle";
  // Every declared feature and their combinations, ABI v3's paged keys too
  // (so the generator's paged draws are judged against the oracle).
  law.features = kAllFeatures | kPagedFeature;
  law.check = [](Implementation& impl, const Problem& p) {
    CheckedRun run;
    if (auto bad = run_with_oracle(impl, p, run)) return *bad;
    const std::vector<double>& out = run.out;
    const OracleResult& o = run.oracle;
    const Comparison c = compare_to_oracle(p, o, out);
    if (c.judged == 0)
      return Verdict::not_applicable("no row is inside the representable domain and sees a key");
    if (c.ok) {
      Verdict v = Verdict::pass();
      v.accuracy = grade_case(p, o, out);
      return v;
    }
    const int64_t k = c.worst_index;
    std::ostringstream m;
    m << c.violations << " element(s) outside the bound; worst " << output_element(p, k) << ": "
      << compared_values("got", out[k], "oracle", o.exact[k], p.dtype) << "; error "
      << num(std::abs(out[k] - o.exact[k])) << " is " << num(c.worst_ratio) << "x the bound " << num(o.bound[k]);
    Verdict v = Verdict::fail(m.str());
    v.accuracy = grade_case(p, o, out);
    return v;
  };
  return law;
}

}  // namespace attncheck
