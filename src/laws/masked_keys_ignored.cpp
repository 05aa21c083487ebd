// masked_keys_ignored: keys hidden from every query row of a head (by the mask
// or the causal rule) contribute nothing: setting their keys and values to
// huge finite values, positive and negative, changes no output.
//
// The problem's own mask is kept and a few keys per head are additionally
// masked for every row (every third key, shifted per head, and the last key),
// so the law applies to every problem; the hidden keys then get entries of
// +-max_finite/4, which make their logits overflow to +-inf or NaN in the dtype.
//
// Catches: a mask applied as a finite additive bias (-1e4, -1e9: a hidden
// logit of +inf or 1e30 beats it), an additive -inf bias meeting an overflowed
// logit (inf - inf = NaN), the row max taken over hidden keys (every visible
// weight underflows: 0/0), the mask ignored or applied after the softmax
// without renormalising, NaN/inf from 0 * inf in the value sum. Cannot catch:
// faults that only involve visible keys (scale, softmax of visible keys).
#include <sstream>

#include "law_framework/law_support.h"

namespace attncheck {
namespace {

// "keys 0, 3 and 4 of head 0, keys 2 and 4 of head 1": the keys hidden from
// every row of each head of `p` (at most 4 heads named; the rest counted).
std::string hidden_keys_text(const Problem& p) {
  const Shape& s = p.shape;
  std::ostringstream os;
  const int64_t heads = s.batch * s.heads, named = std::min<int64_t>(heads, 4);
  for (int64_t bh = 0; bh < named; ++bh) {
    std::vector<int64_t> keys;
    for (int64_t j = 0; j < s.kv_len; ++j) {
      bool seen = false;
      for (int64_t i = 0; i < s.q_len && !seen; ++i) seen = p.visible(bh, i, j);
      if (!seen) keys.push_back(j);
    }
    os << (bh ? ", " : "") << (keys.size() == 1 ? "key " : "keys ");
    for (std::size_t k = 0; k < keys.size(); ++k) os << (k ? (k + 1 == keys.size() ? " and " : ", ") : "") << keys[k];
    if (keys.empty()) os << "none";
    os << " of [b=" << bh / s.heads << "][h=" << bh % s.heads << "]";
  }
  if (heads > named) os << " (and " << heads - named << " more heads)";
  return os.str();
}

}  // namespace

Law law_masked_keys_ignored() {
  Law law;
  law.name = "masked_keys_ignored";
  law.statement = "keys and values hidden from every row, even huge ones, change no output";
  law.check = [](Implementation& impl, const Problem& base) {
    Problem p = base;
    const Shape& s = p.shape;
    const int64_t heads = s.batch * s.heads;
    if (!p.has_mask()) p.mask.assign(s.mask_size(), 1);
    for (int64_t bh = 0; bh < heads; ++bh)
      for (int64_t j = 0; j < s.kv_len; ++j)
        if ((j + bh) % 3 == 0 || j == s.kv_len - 1)
          for (int64_t i = 0; i < s.q_len; ++i) p.mask[p.mask_at(bh, i, j)] = 0;

    Problem huge = p;
    const double big = round_to(p.dtype, max_finite(p.dtype) / 4);
    int64_t hidden = 0;
    for (int64_t bh = 0; bh < heads; ++bh)
      for (int64_t j = 0; j < s.kv_len; ++j) {
        bool seen = false;
        for (int64_t i = 0; i < s.q_len && !seen; ++i) seen = p.visible(bh, i, j);
        if (seen) continue;
        ++hidden;
        // Signs alternate along the row and between keys: logits of either sign, values of both.
        for (int64_t d = 0; d < s.head_dim; ++d) huge.k[p.k_at(bh, j, d)] = ((d + j) % 2 ? -big : big);
        for (int64_t c = 0; c < s.value_dim; ++c) huge.v[p.v_at(bh, j, c)] = ((c + j) % 3 ? big : -big);
      }
    if (hidden == 0) return Verdict::not_applicable("no key is hidden from every row");

    std::vector<double> before, after;
    if (auto bad = run_for(impl, p, before)) return *bad;
    if (auto bad = run_for(impl, huge, after)) return *bad;
    // Every row's visible inputs are the same in both problems, so their exact
    // outputs and their bounds (which depend on visible keys only) agree. The
    // bound of `p` is used for both sides: `huge` is outside the representable
    // domain by construction, yet a correct implementation ignores what it hides.
    const OracleResult ob = oracle(p);
    if (auto m = mismatch(p, before, ob.bound, after, ob.bound, "before", "with huge hidden keys")) {
      std::ostringstream os;
      os << "setting " << hidden << " hidden key(s) and their values to +-" << num(big)
         << " changed the output: " << *m;
      // The masked call is saved: checked as a case, it hides the same keys again (its mask already does).
      const std::string keys = hidden_keys_text(p);
      return Verdict::fail(os.str()).on(
          {{"before", "the case with a mask added so that " + keys + " are hidden from every row (by it, the case's own mask or its causal rule)", p},
           {"with huge hidden keys", "that call with the k and v rows of " + keys + " set to +-" + num(big), huge}});
    }
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
