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

#include "law_framework/law_support.h"
#include "problem/number_text.h"

namespace attncheck {

Law law_weights_in_unit_interval() {
  return weights_law(
      "weights_in_unit_interval", "with V = identity, every output element (an attention weight) lies in [0, 1]",
      [](const Problem& p, const std::vector<double>& weights) {
        const OracleResult o = oracle(p);
        Tally tally;
        for (std::size_t k = 0; k < weights.size(); ++k) {
          const double tol = o.bound[k];
          if (std::isinf(tol)) continue;  // row outside the representable domain
          tally.judge();
          // How far outside [-tol, 1 + tol]; NaN counts as infinitely far.
          const double excess = std::isnan(weights[k]) ? INFINITY : std::max(-tol - weights[k], weights[k] - 1 - tol);
          if (excess > 0) tally.record_worst(static_cast<int64_t>(k), excess);
        }
        if (auto v = tally.settled("no row is inside the representable domain")) return *v;
        const int64_t worst = tally.at;
        const double w = weights[worst], lo = -o.bound[worst], hi = 1 + o.bound[worst];
        // The weight with the digits that tell it from the edge it crossed.
        const PairText below = pair_text(w, lo, p.dtype), above = pair_text(w, hi, p.dtype);
        std::ostringstream m;
        m << tally.violations << " weight(s) outside [0, 1]; worst " << output_element(p, worst) << " (key "
          << worst % p.shape.value_dim << "): got " << (w > hi ? above.a : below.a) << ", allowed [" << below.b
          << ", " << above.b << "]";
        if (std::isfinite(w)) m << " (" << difference_text(w, w > hi ? hi : lo, p.dtype) << " outside)";
        return Verdict::fail(m.str());
      });
}

}  // namespace attncheck
