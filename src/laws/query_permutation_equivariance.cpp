// query_permutation_equivariance: each query row is computed on its own, so
// permuting the query rows (rows of Q and of the mask) permutes the output rows
// the same way. A causal rule is first turned into the equivalent explicit
// mask (exact), so the law applies to every problem with two or more queries.
//
// Catches: output written to the wrong row, state shared between rows (a
// running max or sum not reset between query tiles, a row's result depending
// on its neighbours), query-tile boundary errors, a mask row applied to the
// wrong query.
// Cannot catch: faults that treat every row alike (wrong scale, no max
// subtraction, a dropped key, K and V swapped) or that follow a row's
// position through the causal rule (left to causal_equals_explicit_mask).
#include "law_framework/law_support.h"
#include "problem/transforms.h"

namespace attncheck {

Law law_query_permutation_equivariance() {
  Law law;
  law.name = "query_permutation_equivariance";
  law.statement = "permuting the query rows (Q rows and mask rows) permutes the output rows the same way";
  law.check = [](Implementation& impl, const Problem& given) {
    if (given.shape.q_len < 2) return Verdict::not_applicable("a single query row has no other order");
    const Problem p = with_causal_as_mask(given);
    const std::vector<int64_t> perm = mixing_permutation(p.shape.q_len, problem_fingerprint(p));
    const Problem moved = with_queries_permuted(p, perm);
    std::vector<double> out, out_moved;
    if (auto bad = run_for(impl, p, out)) return *bad;
    if (auto bad = run_for(impl, moved, out_moved)) return *bad;
    const OracleResult o = oracle(p);
    // Row i of the permuted call must match row perm[i] of the original.
    const Shape& s = p.shape;
    std::vector<double> expected(out.size()), expected_tol(out.size());
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = 0; i < s.q_len; ++i)
        for (int64_t c = 0; c < s.value_dim; ++c) {
          expected[p.out_at(bh, i, c)] = out[p.out_at(bh, perm[i], c)];
          expected_tol[p.out_at(bh, i, c)] = o.bound[p.out_at(bh, perm[i], c)];
        }
    if (auto m = mismatch(moved, out_moved, oracle(moved).bound, expected, expected_tol, "rows permuted",
                          "original row moved there"))
      return Verdict::fail(*m + " (the element is indexed in the permuted call)")
          .on({{"original", "", p}, {"rows permuted", "that call with its query rows (q, mask rows) permuted", moved}});
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
