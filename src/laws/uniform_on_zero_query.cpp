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

#include "law_framework/law_support.h"

namespace attncheck {

Law law_uniform_on_zero_query() {
  Law law;
  law.name = "uniform_on_zero_query";
  law.statement = "with q = 0 each output row is the mean of the value rows it sees";
  law.check = [](Implementation& impl, const Problem& base) {
    Problem p = base;
    std::fill(p.q.begin(), p.q.end(), 0.0);
    // The oracle's exact output of this problem is the mean of the visible V rows;
    // its bound is what the dtype allows for averaging them.
    CheckedRun run;
    if (auto bad = run_with_oracle(impl, p, run)) return *bad;
    Verdict v = oracle_verdict(p, run, "with q = 0, ", "are not the mean of the visible values", "mean");
    if (!v.failed()) return v;
    return std::move(v).on({{"q = 0", "the case with every element of q set to 0", p}});
  };
  return law;
}

}  // namespace attncheck
