// single_key_passthrough: a query row that sees exactly one key gives that key
// all the weight (exp(0) / exp(0) = 1), so its output is that key's value row.
//
// The problem keeps its q, k, v and causal rule; its mask is replaced by one
// that leaves each row exactly one key the causal rule allows, at a position
// that varies from row to row and is the last allowed key in some rows.
//
// Catches: K and V exchanged (the K row comes out), a key loop that stops
// short (the last key is lost), exp of the raw logit without the max
// subtraction (a large single logit overflows to inf/inf = NaN), a mask that is
// ignored or applied after normalising over other keys, weights that do not
// come from a softmax. Cannot catch: anything about the scale or about how
// several keys are weighed against each other.
#include <sstream>

#include "law_framework/law_support.h"

namespace attncheck {

Law law_single_key_passthrough() {
  Law law;
  law.name = "single_key_passthrough";
  law.statement = "a query row that sees exactly one key outputs that key's value row";
  law.check = [](Implementation& impl, const Problem& base) {
    Problem p = base;
    const Shape& s = p.shape;
    p.mask.assign(s.mask_size(), 0);
    int64_t judged = 0;
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = 0; i < s.q_len; ++i) {
        // Keys [0, allowed) are what the causal rule leaves to row i.
        int64_t allowed = 0;
        while (allowed < s.kv_len && p.causal_allows(i, allowed)) ++allowed;
        if (allowed == 0) continue;  // the causal rule hides every key: the row stays empty
        // Row 0 of head 0 takes the last allowed key, others walk back from it.
        const int64_t j = allowed - 1 - (bh * 5 + i * 3) % allowed;
        p.mask[p.mask_at(bh, i, j)] = 1;
        ++judged;
      }
    if (judged == 0) return Verdict::not_applicable("the causal rule hides every key from every row");
    // The oracle's exact output is the single visible value row.
    CheckedRun run;
    if (auto bad = run_with_oracle(impl, p, run)) return *bad;
    // The failing call is p, which this law checked as a case builds again (its mask is rebuilt whole).
    Verdict v = oracle_verdict(p, run, "", "of rows that see one key are not that key's value", "value");
    if (!v.failed()) return v;
    return std::move(v).on({{"one key per row",
                             "the case with a mask that leaves each row one key (of those its causal rule allows)",
                             p}});
  };
  return law;
}

}  // namespace attncheck
