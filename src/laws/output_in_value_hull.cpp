// output_in_value_hull: every output is a convex combination of the visible
// value rows, so out[i][c] lies within [min, max] over visible keys j of
// v[j][c], widened by the oracle's bound. (Rows that see no key are fully_masked_rows_zero's.)
//
// Catches: weights that are not a probability distribution (the founding
// "fix" that multiplies V by Q, a missing normaliser, negative weights), values
// taken from the wrong tensor or rows (K and V swapped, a masked key's value
// leaking in, a stride that reads another head's V), NaN or garbage in rows
// inside the representable domain, rows that see nothing filled with anything
// but zeros.
// Cannot catch: a wrong distribution over the right values (wrong scale, a key
// dropped from the softmax, causal rule off by one) unless it leaves the hull.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "law_framework/law_support.h"
#include "problem/number_text.h"

namespace attncheck {

Law law_output_in_value_hull() {
  Law law;
  law.name = "output_in_value_hull";
  law.statement = "each output element lies between the smallest and largest visible value of its column";
  law.check = [](Implementation& impl, const Problem& p) {
    CheckedRun run;
    if (auto bad = run_with_oracle(impl, p, run)) return *bad;
    const Shape& s = p.shape;
    Tally tally;
    double worst_lo = 0, worst_hi = 0;
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = 0; i < s.q_len; ++i)
        for (int64_t c = 0; c < s.value_dim; ++c) {
          const int64_t at = p.out_at(bh, i, c);
          const double tol = run.oracle.bound[at], got = run.out[at];
          if (std::isinf(tol)) continue;  // outside the representable domain
          tally.judge();
          double lo = INFINITY, hi = -INFINITY;
          for (int64_t j = 0; j < s.kv_len; ++j)
            if (p.visible(bh, i, j)) {
              lo = std::min(lo, p.v[p.v_at(bh, j, c)]);
              hi = std::max(hi, p.v[p.v_at(bh, j, c)]);
            }
          if (lo > hi) continue;  // sees nothing: judged by fully_masked_rows_zero
          const double excess = std::isnan(got) ? INFINITY : std::max(lo - tol - got, got - hi - tol);
          if (excess > 0 && tally.record_worst(at, excess)) { worst_lo = lo; worst_hi = hi; }
        }
    if (auto v = tally.settled("no row is inside the representable domain")) return *v;
    const int64_t worst = tally.at;
    const double got = run.out[worst], edge = got > worst_hi ? worst_hi : worst_lo;
    // The output with the digits that tell it from the edge of the span it crossed.
    const PairText below = pair_text(got, worst_lo, p.dtype), above = pair_text(got, worst_hi, p.dtype);
    std::ostringstream m;
    m << tally.violations << " element(s) outside the hull of the visible values; worst " << output_element(p, worst)
      << ": got " << (got > worst_hi ? above.a : below.a) << ", visible values span [" << below.b << ", " << above.b
      << "]: " << difference_text(got, edge, p.dtype, run.oracle.bound[worst]) << " past the edge";
    return Verdict::fail(m.str());
  };
  return law;
}

}  // namespace attncheck
