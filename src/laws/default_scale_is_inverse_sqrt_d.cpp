// default_scale_is_inverse_sqrt_d: asking for the default scale (NaN) gives
// the same output as passing 1/sqrt(head_dim) explicitly, rounded to the dtype.
//
// The tolerance is each run's own oracle bound plus the exact difference the
// rounding of the explicit scale makes (at most a relative u on every logit),
// which the oracle measures directly: |exact(default) - exact(explicit)|.
//
// Catches: a default of 1 (the founding layer), 1/head_dim, 1/sqrt(value_dim)
// or 1/sqrt of another extent, a default computed from the wrong argument, an
// explicit scale that is ignored or applied twice on one path only. Cannot
// catch: a wrong scale used identically on both paths (see matches_oracle), and
// nothing at all when head_dim is 1 or q.k is 0 (every candidate then agrees).
#include <cmath>
#include <sstream>

#include "law_framework/law_support.h"

namespace attncheck {

Law law_default_scale_is_inverse_sqrt_d() {
  Law law;
  law.name = "default_scale_is_inverse_sqrt_d";
  law.statement = "the default scale (NaN) gives the same output as an explicit 1/sqrt(head_dim)";
  law.check = [](Implementation& impl, const Problem& base) {
    Problem by_default = base;
    by_default.scale = std::nan("");
    Problem by_value = base;
    by_value.scale = round_to(base.dtype, 1.0 / std::sqrt(static_cast<double>(base.shape.head_dim)));

    std::vector<double> a, b;
    if (auto bad = run_for(impl, by_default, a)) return *bad;
    if (auto bad = run_for(impl, by_value, b)) return *bad;
    OracleResult oa = oracle(by_default);
    const OracleResult ob = oracle(by_value);
    // Fold the exact effect of the rounded scale into the default side's tolerance.
    for (std::size_t k = 0; k < oa.bound.size(); ++k) {
      // Where the exact outputs are not finite (outside the domain) the gap is
      // undefined: not judged, like the rest of such a row.
      const double gap = std::abs(oa.exact[k] - ob.exact[k]);
      oa.bound[k] = std::isnan(gap) ? INFINITY : oa.bound[k] + gap;
    }
    if (auto m = mismatch(by_default, a, oa.bound, b, ob.bound, "default scale", "explicit scale")) {
      std::ostringstream os;
      os << "the default scale disagrees with the explicit 1/sqrt(" << base.shape.head_dim
         << ") = " << num(by_value.scale) << ": " << *m;
      return Verdict::fail(os.str()).on({{"default scale", "", by_default}, {"explicit scale", "", by_value}});
    }
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
