// masked_weights_zero: with V = identity the output is the weight matrix P,
// and the weight of every key a row cannot see (mask or causal rule) is
// exactly 0. (Rows that see no key are fully_masked_rows_zero's.)
//
// Catches: a mask or causal rule ignored or applied to the wrong index (mask
// transposed, a head's mask stride wrong, causal alignment swapped, the causal
// boundary one key late), a mask applied after the softmax (weights renormalised
// over the wrong set), a "soft" mask that adds a large finite negative (-1e4,
// -1e9) instead of excluding the key: its weight is tiny but not 0, and for large
// logits not even tiny.
// Cannot catch: errors in the weights of visible keys (see weights_sum_to_one,
// matches_oracle). Rows outside the representable domain are not judged: a
// correct implementation may return NaN there.
//
// A problem in which every key is visible is given a mask derived from its
// fingerprint (about one key in four hidden), so the law is always exercised.
#include <algorithm>
#include <sstream>

#include "law_framework/law_support.h"
#include "problem/transforms.h"

namespace attncheck {

namespace {

bool hides_some_key(const Problem& p) {
  const Shape& s = p.shape;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i)
      for (int64_t j = 0; j < s.kv_len; ++j)
        if (!p.visible(bh, i, j)) return true;
  return false;
}

// p with a mask that hides about a quarter of the keys, in a pattern that
// depends on the problem (so different cases hide different keys).
Problem with_derived_mask(const Problem& p) {
  Problem r = p;
  const Shape& s = p.shape;
  const uint64_t salt = problem_fingerprint(p) % 4;
  r.mask.assign(s.mask_size(), 1);
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i)
      for (int64_t j = 0; j < s.kv_len; ++j)
        r.mask[r.mask_at(bh, i, j)] = (static_cast<uint64_t>(7 * i + 3 * j + 5 * bh) + salt) % 4 != 0;
  return r;
}

}  // namespace

Law law_masked_weights_zero() {
  return weights_law(
      "masked_weights_zero",
      "with V = identity, the weight of every key a row cannot see (mask or causal rule) is exactly 0",
      [](const Problem& p, const std::vector<double>& weights) {
        const Shape& s = p.shape;
        Tally tally;
        for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
          for (int64_t i = 0; i < s.q_len; ++i) {
            if (!row_in_finite_domain(p, bh, i)) continue;
            for (int64_t j = 0; j < s.kv_len; ++j) {
              if (p.visible(bh, i, j)) continue;
              tally.judge();
              if (weights[p.out_at(bh, i, j)] != 0) tally.record_first(p.out_at(bh, i, j));  // NaN included
            }
          }
        if (auto v = tally.settled("no hidden key in a row inside the representable domain")) return *v;
        const int64_t first = tally.at, i = (first / s.value_dim) % s.q_len, j = first % s.value_dim;
        std::ostringstream m;
        m << tally.violations << " hidden key(s) got a nonzero weight; first " << output_element(p, first) << " (key "
          << j << ", hidden by " << (p.causal_allows(i, j) ? "the mask" : "the causal rule") << "): got "
          << num(weights[first]) << ", must be exactly 0";
        return Verdict::fail(m.str());
      },
      [](const Problem& base) { return hides_some_key(base) ? base : with_derived_mask(base); });
}

}  // namespace attncheck
