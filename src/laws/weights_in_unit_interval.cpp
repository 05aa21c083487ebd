// weights_in_unit_interval: with V = identity the output is the weight matrix
// P, and every weight lies in [0, 1] (up to the oracle's bound).
//
// Catches: weights that are not a softmax at all (the founding "fix" that
// multiplies V by Q, logits used as weights), a missing or wrong normaliser
// (dividing by a partial sum, by the max instead of the sum), negative weights
// from a subtraction gone wrong, NaN weights inside the representable domain
// (exp overflow without max subtraction).
// Cannot catch: weights that are a valid distribution but the wrong one (wrong
// scale, causal rule off by one, a dropped key, K and V swapped): those stay
// in [0, 1]. Rows outside the representable domain are not judged.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "laws/law_support.h"

namespace attncheck {

Law law_weights_in_unit_interval() {
  Law law;
  law.name = "weights_in_unit_interval";
  law.statement = "with V = identity, every output element (an attention weight) lies in [0, 1]";
  law.tailor = [](GenOptions& g) { g.max_kv_len = std::min(g.max_kv_len, kMaxIdentityKeys); };
  law.check = [](Implementation& impl, const Problem& base) {
    if (base.shape.kv_len > kMaxIdentityKeys) return Verdict::not_applicable("kv_len above kMaxIdentityKeys");
    const Problem p = with_identity_values(base);
    std::vector<double> out;
    if (auto bad = run_for(impl, p, out)) return *bad;
    const OracleResult o = oracle(p);
    int64_t judged = 0, violations = 0, worst = -1;
    double worst_excess = 0;
    for (std::size_t k = 0; k < out.size(); ++k) {
      const double tol = o.bound[k];
      if (std::isinf(tol)) continue;  // row outside the representable domain
      ++judged;
      // How far outside [-tol, 1 + tol]; NaN counts as infinitely far.
      const double excess = std::isnan(out[k]) ? INFINITY : std::max(-tol - out[k], out[k] - 1 - tol);
      if (excess > 0) {
        ++violations;
        if (worst < 0 || excess > worst_excess) { worst = static_cast<int64_t>(k); worst_excess = excess; }
      }
    }
    if (judged == 0) return Verdict::not_applicable("no row is inside the representable domain");
    if (worst < 0) return Verdict::pass();
    std::ostringstream m;
    m << violations << " weight(s) outside [0, 1]; worst " << output_element(p, worst) << " (key " << worst % p.shape.value_dim
      << "): got " << num(out[worst]) << ", allowed [" << num(-o.bound[worst]) << ", " << num(1 + o.bound[worst]) << "]";
    return Verdict::fail(m.str());
  };
  return law;
}

}  // namespace attncheck
