// grad_query_permutation_equivariance: permuting the query rows (rows of Q,
// of dout, of the mask and of the bias, together) permutes the rows of dq the
// same way and leaves dk and dv unchanged (they sum over the rows). A causal
// rule is first turned into its explicit mask (exact). Each call within its
// own rounding bound. Not with lengths, windows or ALiBi, which tie a row to
// its position.
//
// Catches: dq written to the wrong row, a row's D = rowsum(dO * O) or lse
// taken from a neighbour (off by one in a query tile), state kept between
// query tiles (a dK/dV accumulator not reset, the last query tile dropped),
// dout read with a row stride of its own.
// Cannot catch: faults that treat every row alike (a wrong scale, a missing
// rowsum term): the other gradient laws see those.
#include "law_framework/grad_support.h"
#include "problem/transforms.h"

namespace attncheck {

namespace {

// Row i of the result is row perm[i] of p in every head: Q, dout, and the mask
// and bias (made full). p has no causal rule, lengths, window or ALiBi.
Problem queries_permuted(const Problem& given, const std::vector<int64_t>& perm) {
  Problem p = given;
  p.expand_mask();
  p.expand_bias();
  Problem r = p;
  const Shape& s = p.shape;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      for (int64_t d = 0; d < s.head_dim; ++d) r.q[r.q_at(bh, i, d)] = p.q[p.q_at(bh, perm[i], d)];
      for (int64_t c = 0; c < s.value_dim; ++c) r.dout[r.out_at(bh, i, c)] = p.dout[p.out_at(bh, perm[i], c)];
      for (int64_t j = 0; j < s.kv_len; ++j) {
        if (p.has_mask()) r.mask[r.mask_at(bh, i, j)] = p.mask[p.mask_at(bh, perm[i], j)];
        if (p.has_bias()) r.bias[r.bias_at(bh, i, j)] = p.bias[p.bias_at(bh, perm[i], j)];
      }
    }
  return r;
}

}  // namespace

Law law_grad_query_permutation_equivariance() {
  Law law;
  law.name = "grad_query_permutation_equivariance";
  law.statement = "permuting the query rows (Q, dout, mask and bias rows) permutes dq the same way and leaves dk and dv";
  law.features = kEveryFeature & ~ATTNCHECK_FEATURE_LENGTHS & ~ATTNCHECK_FEATURE_WINDOW & ~ATTNCHECK_FEATURE_ALIBI;
  law.required = kBackwardFeature;
  law.check = [](Implementation& impl, const Problem& drawn) {
    const Problem given = backward_of(drawn);
    if (given.shape.q_len < 2) return Verdict::not_applicable("a single query row has no other order");
    if (!given.is_backward()) return Verdict::not_applicable("a forward problem (no dout): the law is about gradients");
    if (!given.q_lens.empty() || !given.kv_lens.empty() || given.window_left >= 0 || given.window_right >= 0 ||
        !given.alibi_slopes.empty())
      return Verdict::not_applicable("lengths, a window or ALiBi tie rows to their positions");
    const Problem p = with_causal_as_mask(given);
    const Shape& s = p.shape;
    const std::vector<int64_t> perm = mixing_permutation(s.q_len, problem_fingerprint(p));
    const Problem moved = queries_permuted(p, perm);
    GradRun base, perm_run;
    if (auto bad = run_backward_bounded(impl, p, base)) return *bad;
    if (auto bad = run_backward_bounded(impl, moved, perm_run)) return *bad;
    Outcome expected;
    GradBounds tol;
    expected.dk = base.outcome.dk;
    expected.dv = base.outcome.dv;
    tol.dk = base.bounds.dk;
    tol.dv = base.bounds.dv;
    expected.dq.resize(base.outcome.dq.size());
    tol.dq.resize(base.outcome.dq.size());
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = 0; i < s.q_len; ++i)
        for (int64_t d = 0; d < s.head_dim; ++d) {
          expected.dq[p.q_at(bh, i, d)] = base.outcome.dq[p.q_at(bh, perm[i], d)];
          tol.dq[p.q_at(bh, i, d)] = base.bounds.dq[p.q_at(bh, perm[i], d)];
        }
    int64_t judged = 0;
    if (auto m = grad_mismatch(moved, perm_run.outcome, perm_run.bounds, expected, tol, "rows permuted",
                               "original row moved there", judged))
      return Verdict::fail(*m + " (the element is indexed in the permuted call)")
          .on({{"original", "", p},
               {"rows permuted", "that call with its query rows (q, dout, mask and bias rows) permuted", moved}});
    if (judged == 0) return Verdict::not_applicable("no gradient element of the call is judged");
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
