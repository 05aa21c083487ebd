// weights_sum_to_one: with V = identity the output is the weight matrix P, and
// every row that sees at least one key must sum to 1. A fault that drops or
// double-counts normalisation (the founding "fix" that multiplies V by Q, a
// missing division by the sum, a sum over the wrong axis) breaks it.
#include <cmath>
#include <sstream>

#include "law_framework/law_support.h"
#include "problem/number_text.h"

namespace attncheck {

Law law_weights_sum_to_one() {
  return weights_law(
      "weights_sum_to_one", "with V = identity, each output row (the attention weights) sums to 1 when the row sees a key",
      [](const Problem& p, const std::vector<double>& weights) {
        const OracleResult o = oracle(p);
        const Shape& s = p.shape;
        Tally tally;
        for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
          for (int64_t i = 0; i < s.q_len; ++i) {
            if (!o.row_in_domain[bh * s.q_len + i]) continue;  // sees nothing, or overflows
            tally.judge();
            double sum = 0, tol = 0;
            for (int64_t j = 0; j < s.kv_len; ++j) {
              sum += weights[p.out_at(bh, i, j)];
              tol += o.bound[p.out_at(bh, i, j)];
            }
            tol += s.kv_len * std::ldexp(1.0, -52) * (1 + std::abs(sum));  // this check's own summation
            if (!(std::abs(sum - 1) <= tol)) {
              std::ostringstream m;
              // The sum is a double of the dtype's weights: as many digits as tell it from 1.
              const PairText t = pair_text(sum, 1.0, p.dtype);
              m << "weights of row " << output_row(p, bh, i) << " sum to " << t.a << ", not " << t.b << " ("
                << difference_text(sum, 1.0, p.dtype, tol) << ")";
              return Verdict::fail(m.str());
            }
          }
        return *tally.settled("no row sees a key");
      });
}

}  // namespace attncheck
