// grad_empty_rows_zero: a query row that sees no key has dq exactly 0, and an
// existing key that no row of its (batch, kv head) sees has dk and dv exactly
// 0 (ABI v2: not NaN, not stale memory, not left unwritten).
//
// Judged on the drawn problem and on two built from it: (1) its mask ANDed
// with one that empties every third row (and row 0 of each head) and hides
// every fourth key (j % 4 == 1) from every row; (2) when q_len >= 2, the
// bottom_right rule with the keys cut to fewer than q_len, which leaves the
// first rows an empty causal window and no mask.
//
// Catches: NaN from 0/0 in a row's softmax or from an lse of -inf (exp(s - lse)
// with s = lse = -inf), dq of an empty row computed from a uniform fallback,
// empty rows or unseen keys skipped and left holding what the buffer held,
// a key's dk/dv accumulated from rows that do not see it.
// Cannot catch: anything about rows that see a key and keys that are seen.
// Judged inside the backward's domain only (oracle/grad_rounding.h): where dout
// times V overflows, a dense kernel's masked entries are 0 * inf; and, as the
// gradient oracle, inside the forward's domain (a row whose ALiBi term or logit
// overflows has out NaN, which zero weights carry into every key of its kv head).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "law_framework/grad_support.h"
#include "oracle/oracle.h"
#include "problem/transforms.h"

namespace attncheck {

namespace {

// The first element of an empty row's dq or an unseen key's dk/dv that is not
// exactly 0; counts what was judged in `judged`.
std::optional<std::string> nonzero(const Problem& p, const Outcome& o, int64_t& judged) {
  const Shape& s = p.shape;
  // Zeros are judged inside the backward's domain (oracle/grad_rounding.h): a
  // row whose dP overflows makes a dense kernel's 0 * inf NaN, for its dq and
  // its kv head's dk and dv.
  const GradMagnitudes m = grad_magnitudes(p, o.out);
  std::vector<uint8_t> head_in_domain(static_cast<std::size_t>(s.batch * s.kv_head_count()), 1);
  // And, as the gradient oracle has it (docs/tolerance.md, "Gradients", "Not
  // judged"), outside the forward's own domain: a row that sees a key where
  // row_in_finite_domain fails (an ALiBi term or a logit that overflows: its
  // out is NaN), or a row that sees none whose products are not representable,
  // puts NaN into every key of its kv head through a dense kernel's zero weights.
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      if (!p.row_exists(bh, i) || !head_in_domain[p.kv_of(bh)]) continue;
      const bool inside = m.in_domain[bh * s.q_len + i] &&
                          (p.row_sees_any_key(bh, i) ? row_in_finite_domain(p, bh, i) : row_representable(p, bh, i));
      if (!inside) head_in_domain[p.kv_of(bh)] = 0;
    }
  auto report = [&](GradTensor t, int64_t at, const char* what) {
    std::ostringstream m;
    const double x = grad_of(o, t)[at];
    m << grad_element(p, t, at) << " is " << (std::isnan(x) ? std::string("NaN") : num(x)) << " for " << what
      << "; expected exactly 0 (" << p.header() << ")";
    return m.str();
  };
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      if (!p.row_exists(bh, i) || p.row_sees_any_key(bh, i) || !m.in_domain[bh * s.q_len + i]) continue;
      ++judged;
      for (int64_t d = 0; d < s.head_dim; ++d)
        if (o.dq[p.q_at(bh, i, d)] != 0) return report(GradTensor::dq, p.q_at(bh, i, d), "a row that sees no key");
    }
  const int64_t group = s.heads / s.kv_head_count();
  for (int64_t kv = 0; kv < s.batch * s.kv_head_count(); ++kv) {
    const int64_t b = kv / s.kv_head_count(), first_head = b * s.heads + (kv % s.kv_head_count()) * group;
    if (!head_in_domain[kv]) continue;
    for (int64_t j = 0; j < p.kv_len_of(b); ++j) {
      bool seen = false;
      for (int64_t bh = first_head; bh < first_head + group && !seen; ++bh)
        for (int64_t i = 0; i < s.q_len && !seen; ++i) seen = p.visible(bh, i, j);
      if (seen) continue;
      ++judged;
      for (int64_t d = 0; d < s.head_dim; ++d)
        if (o.dk[p.k_at(kv, j, d)] != 0) return report(GradTensor::dk, p.k_at(kv, j, d), "a key that no row sees");
      for (int64_t c = 0; c < s.value_dim; ++c)
        if (o.dv[p.v_at(kv, j, c)] != 0) return report(GradTensor::dv, p.v_at(kv, j, c), "a key that no row sees");
    }
  }
  return std::nullopt;
}

}  // namespace

Law law_grad_empty_rows_zero() {
  Law law;
  law.name = "grad_empty_rows_zero";
  law.statement = "dq of a row that sees no key, and dk and dv of a key no row sees, are exactly 0";
  law.features = kEveryFeature;
  law.required = kBackwardFeature;
  law.check = [](Implementation& impl, const Problem& drawn) {
    const Problem base = backward_of(drawn);
    if (!base.is_backward()) return Verdict::not_applicable("a forward problem (no dout): the law is about gradients");
    const Shape& s = base.shape;
    // Each call with how it came from the case (a failure names the one it was seen on).
    std::vector<LawCall> cases{{"the case", "", base}};
    cases.push_back({"rows 0, 3, ... and keys 1, 5, ... masked",
                     "the case with every third query row (0, 3, ...) and every fourth key (1, 5, ...) masked whole",
                     with_mask_anded(base, [](int64_t, int64_t i, int64_t j) { return i % 3 != 0 && j % 4 != 1; })});
    if (s.q_len >= 2) {
      Problem late = with_keys(base, 0, std::min(s.kv_len, s.q_len - 1));
      late.mask.clear();
      late.mask_broadcast = Broadcast{};
      late.causal = Causal::bottom_right;
      cases.push_back({"fewer keys than queries, bottom-right",
                       "the case cut to its first " + std::to_string(late.shape.kv_len) +
                           " key(s), with no mask and the bottom-right causal rule, so its first rows see no key",
                       std::move(late)});
    }
    int64_t judged = 0;
    for (const LawCall& c : cases) {
      // A derived case with a feature the implementation does not declare
      // (the mask, the causal rule) is left out, not the whole case.
      if (&c != &cases.front() && (c.problem.features() & ~impl.features())) continue;
      Outcome o;
      if (auto bad = run_backward(impl, c.problem, o)) return *bad;
      if (auto m = nonzero(c.problem, o, judged)) return Verdict::fail(*m).on({c});
    }
    if (judged == 0) return Verdict::not_applicable("no row sees nothing and every key is seen");
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
