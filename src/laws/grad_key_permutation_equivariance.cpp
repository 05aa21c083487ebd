// grad_key_permutation_equivariance: permuting the keys (rows of K and V,
// columns of the mask and bias, together) leaves out and dq unchanged and
// permutes dk and dv the same way: key j of the permuted call has the
// gradients of key perm[j] of the original. A causal rule is first turned
// into its explicit mask (exact). Each call within its own rounding bound.
// Not with lengths, windows or ALiBi, which tie a key to its position.
//
// Catches: a key's gradient written to another key's row (a tile offset off
// by one in the dK/dV loop, the last tile's keys dropped or doubled), dk and
// dv rows written with different strides, a mask or bias column applied to
// the wrong key in the backward only, dq accumulated over a key range that
// depends on position.
// Cannot catch: faults symmetric in the keys (a missing rowsum term, a wrong
// scale, unnormalised dV), which the other gradient laws see.
#include "law_framework/grad_support.h"
#include "problem/transforms.h"

namespace attncheck {

namespace {

// Key j of the result is key perm[j] of p in every kv head; mask and bias
// (made full) move with it. p has no causal rule, lengths, window or ALiBi.
Problem keys_permuted(const Problem& given, const std::vector<int64_t>& perm) {
  Problem p = given;
  p.expand_mask();
  p.expand_bias();
  Problem r = p;
  const Shape& s = p.shape;
  for (int64_t kv = 0; kv < s.batch * s.kv_head_count(); ++kv)
    for (int64_t j = 0; j < s.kv_len; ++j) {
      for (int64_t d = 0; d < s.head_dim; ++d) r.k[r.k_at(kv, j, d)] = p.k[p.k_at(kv, perm[j], d)];
      for (int64_t c = 0; c < s.value_dim; ++c) r.v[r.v_at(kv, j, c)] = p.v[p.v_at(kv, perm[j], c)];
    }
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i)
      for (int64_t j = 0; j < s.kv_len; ++j) {
        if (p.has_mask()) r.mask[r.mask_at(bh, i, j)] = p.mask[p.mask_at(bh, i, perm[j])];
        if (p.has_bias()) r.bias[r.bias_at(bh, i, j)] = p.bias[p.bias_at(bh, i, perm[j])];
      }
  return r;
}

}  // namespace

Law law_grad_key_permutation_equivariance() {
  Law law;
  law.name = "grad_key_permutation_equivariance";
  law.statement = "permuting the keys (K, V rows, mask and bias columns) permutes dk and dv the same way and leaves dq";
  law.features = kEveryFeature & ~ATTNCHECK_FEATURE_LENGTHS & ~ATTNCHECK_FEATURE_WINDOW & ~ATTNCHECK_FEATURE_ALIBI;
  law.required = kBackwardFeature;
  law.check = [](Implementation& impl, const Problem& drawn) {
    const Problem given = backward_of(drawn);
    if (given.shape.kv_len < 2) return Verdict::not_applicable("a single key has no other order");
    if (!given.q_lens.empty() || !given.kv_lens.empty() || given.window_left >= 0 || given.window_right >= 0 ||
        !given.alibi_slopes.empty())
      return Verdict::not_applicable("lengths, a window or ALiBi tie keys to their positions");
    const Problem p = with_causal_as_mask(given);
    const Shape& s = p.shape;
    const std::vector<int64_t> perm = mixing_permutation(s.kv_len, problem_fingerprint(p));
    const Problem moved = keys_permuted(p, perm);
    GradRun base, perm_run;
    if (auto bad = run_backward_bounded(impl, p, base)) return *bad;
    if (auto bad = run_backward_bounded(impl, moved, perm_run)) return *bad;
    // The original's gradients moved to where the permuted call must put them.
    Outcome expected;
    GradBounds tol;
    expected.dq = base.outcome.dq;
    tol.dq = base.bounds.dq;
    for (GradTensor t : {GradTensor::dk, GradTensor::dv}) {
      const int64_t cols = t == GradTensor::dk ? s.head_dim : s.value_dim;
      const std::vector<double>&from = grad_of(base.outcome, t), &from_bound = bound_of(base.bounds, t);
      std::vector<double>& g = grad_of(expected, t);
      std::vector<double>& e = t == GradTensor::dk ? tol.dk : tol.dv;
      g.resize(from.size());
      e.resize(from.size());
      for (int64_t kv = 0; kv < s.batch * s.kv_head_count(); ++kv)
        for (int64_t j = 0; j < s.kv_len; ++j)
          for (int64_t c = 0; c < cols; ++c) {
            g[(kv * s.kv_len + j) * cols + c] = from[(kv * s.kv_len + perm[j]) * cols + c];
            e[(kv * s.kv_len + j) * cols + c] = from_bound[(kv * s.kv_len + perm[j]) * cols + c];
          }
    }
    int64_t judged = 0;
    if (auto m = grad_mismatch(moved, perm_run.outcome, perm_run.bounds, expected, tol, "keys permuted",
                               "original key moved there", judged))
      return Verdict::fail(*m + " (the element is indexed in the permuted call)")
          .on({{"keys in order", "", p},
               {"keys permuted", "that call with its keys (k, v rows, mask and bias columns) permuted", moved}});
    if (judged == 0) return Verdict::not_applicable("no gradient element of the call is judged");
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
