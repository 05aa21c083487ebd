// uniform_on_zero_query: with q = 0 every logit is exactly 0, so every visible
// key gets the same weight and each output row is the plain mean of the value
// rows it sees. (Rows that see no key are fully_masked_rows_zero's.)
//
// Catches: a normaliser over the wrong key set (dividing by kv_len instead of
// the visible count, masked keys leaking into the sum), keys dropped or read
// twice (loop bounds, tile edges), a causal rule shifted by one, K and V
// exchanged (the mean of K rows), outputs not formed from softmax weights at all
// (the founding "fix" gives 0 here). Cannot catch: anything about how logits
// are formed or scaled (they are all zero), overflow in exp (none happens).
#include <algorithm>
#include <sstream>

#include "laws/law_support.h"

namespace attncheck {

Law law_uniform_on_zero_query() {
  Law law;
  law.name = "uniform_on_zero_query";
  law.statement = "with q = 0 each output row is the mean of the value rows it sees";
  law.check = [](Implementation& impl, const Problem& base) {
    Problem p = base;
    std::fill(p.q.begin(), p.q.end(), 0.0);
    std::vector<double> out;
    if (auto bad = run_for(impl, p, out)) return *bad;
    // The oracle's exact output of this problem is the mean of the visible V rows;
    // its bound is what the dtype allows for averaging them.
    const OracleResult o = oracle(p);
    const Comparison c = compare_to_oracle(p, o, out);
    if (c.ok) return Verdict::pass();
    const int64_t k = c.worst_index;
    std::ostringstream m;
    m << "with q = 0, " << c.violations << " element(s) are not the mean of the visible values; worst "
      << output_element(p, k) << ": got " << num(out[k]) << ", mean " << num(o.exact[k]) << ", allowed difference "
      << num(o.bound[k]);
    return Verdict::fail(m.str());
  };
  return law;
}

}  // namespace attncheck
