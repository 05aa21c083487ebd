// alibi_batch_matches_alone (ABI v3, "ALiBi per (batch, head)"): with slopes
// per (batch, head) (alibi_slopes [batch] rows of alibi_batch_stride floats,
// the first heads of each read), each batch entry b gives the out rows and
// lse of the same entry run alone (batch 1, the same extents, lengths and
// strides) with its row of slopes as version 2's [heads] (stride 0): bit for
// bit when the implementation promises BATCH_INVARIANT (the two calls give b
// the same inputs), else within twice the alone call's bound (the rows are the
// same rows in both calls).
//
// Catches: one batch entry's slopes used for every entry (the spec's named
// fault: row 0, or the last row), the stride ignored (row b read at b * heads
// when the call's rows are wider, or at 0), the slope read by query head over
// the flattened [batch * heads] without the stride, the poisoned floats
// between rows read as slopes. Cannot catch: a fault of ALiBi itself that the
// alone call has too (a sign, a distance from the wrong diagonal: matches_oracle
// and alibi_equals_bias judge those on version 2's slopes), nor an entry whose
// row happens to equal the row the faulty kernel reads (the generator draws
// rows that differ, but may repeat one).
#include <algorithm>
#include <sstream>
#include <string>

#include "law_framework/batch_composition.h"
#include "law_framework/law_support.h"

namespace attncheck {

Law law_alibi_batch_matches_alone() {
  Law law;
  law.name = "alibi_batch_matches_alone";
  law.statement = "with ALiBi slopes per (batch, head), each batch entry equals the same entry run alone with its "
                  "row of slopes as version 2's [heads]";
  // Padded calls of version 2's features (the alone call is entry b's slice).
  law.features = kAllFeatures | kAlibiBatchFeature;
  law.required = kAlibiBatchFeature | ATTNCHECK_FEATURE_ALIBI;
  // Two or more entries (one row of slopes has nothing to mix up) and two or
  // more keys (one key's weight is 1 whatever its slope); the fault shows at
  // any length, so rows and heads stay short: the law runs in every default
  // check of the three references.
  law.tailor = [](GenOptions& g) {
    if (g.max_batch >= 2) g.min_batch = std::max<int64_t>(g.min_batch, 2);
    if (g.max_kv_len >= 2) g.min_kv_len = std::max<int64_t>(g.min_kv_len, 2);
    g.max_kv_len = std::max(g.min_kv_len, std::min<int64_t>(g.max_kv_len, 96));
    g.max_q_len = std::max(g.min_q_len, std::min<int64_t>(g.max_q_len, 64));
    g.max_head_dim = std::max(g.min_head_dim, std::min<int64_t>(g.max_head_dim, 64));
    g.max_value_dim = std::min<int64_t>(g.max_value_dim, 64);
  };
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.alibi_per_batch()) return Verdict::not_applicable("ALiBi slopes not per (batch, head)");
    const Shape& s = p.shape;
    const Outcome whole = impl.run(p);
    if (auto bad = unusable(whole)) return *bad;
    const bool bitwise = (impl.promises() & ATTNCHECK_PROMISE_BATCH_INVARIANT) != 0;
    int64_t judged = 0;
    for (int64_t b = 0; b < s.batch; ++b) {
      Problem one_p = entry_alone(p, b);  // alibi_slopes [heads] of row b, version 2's form
      one_p.alibi_slopes.assign(p.alibi_slopes.begin() + b * s.heads, p.alibi_slopes.begin() + (b + 1) * s.heads);
      one_p.alibi_batch_stride = 0;
      const Outcome one = impl.run(one_p);
      if (auto bad = unusable(one)) return *bad;
      const std::optional<OracleResult> one_o = bitwise ? std::nullopt : std::optional<OracleResult>(oracle(one_p));
      if (auto m = entry_mismatch(p, whole, b, one_p, one, one_o ? &*one_o : nullptr, judged)) {
        // entry_mismatch names the batch call "the composed batch": here it is the case itself.
        for (std::size_t at; (at = m->find("in the composed batch")) != std::string::npos;)
          m->replace(at, 21, "in the case");
        std::ostringstream what;
        what << "batch entry " << b << " with slopes per (batch, head) (alibi_batch_stride " << p.alibi_batch_stride
             << ") differs from the same entry alone with its row of slopes as [heads] " << *m;
        return Verdict::fail(what.str()).on(
            {{"per_batch", "", p},
             {"alone", "batch entry " + std::to_string(b) + " alone (batch 1), its slopes as version 2's [heads]",
              one_p}});
      }
    }
    if (judged == 0) return Verdict::not_applicable("no row of any batch entry is judged by the oracle's bound");
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
