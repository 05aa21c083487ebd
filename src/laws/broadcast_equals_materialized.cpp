// broadcast_equals_materialized (ABI v3, "Broadcast K and V"): a call whose k
// or v is expanded over batch entries (stride 0 on the view's axis 0) or over
// kv heads (axis 1), and the same call with the same values materialized
// (every entry and head its own bytes, dense or as the case's layout), give
// out and lse that agree within the sum of the two calls' bounds (the oracle's
// bound is the same for both: the values are), NaN in one only a difference.
// The spec asks agreement within the bound: a kernel may take another path
// for an expanded tensor (a multi-query path), whose rounding may differ.
//
// Catches: a 0 stride taken for "contiguous" and dense strides recomputed
// (pytorch/pytorch#191937, key_strides (3584, 0, 256, 1)), a stride of 0
// replaced by a default, the expanded axis read with the other axis's stride,
// an expanded tensor copied with the wrong extents. Cannot catch: a fault the
// materialized call has too (matches_oracle judges that), an implementation
// that refuses the expanded form of every drawn case (not applicable, never
// passed), or broadcast over a batch of one entry and one kv head (not drawn).
#include <algorithm>
#include <vector>

#include "law_framework/law_support.h"
#include "law_framework/packed_calls.h"
#include "problem/kv_broadcast.h"

namespace attncheck {

Law law_broadcast_equals_materialized() {
  Law law;
  law.name = "broadcast_equals_materialized";
  law.statement = "k or v expanded over batch entries or kv heads (stride 0) agrees, within the bound, with the "
                  "same values materialized";
  // Padded calls of version 2's features; the expanded axes need two entries or two kv heads.
  law.features = kAllFeatures | kBroadcastKvFeature;
  law.required = kBroadcastKvFeature;
  // Two or more entries; short rows and small heads: a stride fault shows at
  // any length, and the law runs in every default check of the references.
  law.tailor = [](GenOptions& g) {
    if (g.max_batch >= 2) g.min_batch = std::max<int64_t>(g.min_batch, 2);
    g.max_kv_len = std::max(g.min_kv_len, std::min<int64_t>(g.max_kv_len, 96));
    g.max_q_len = std::max(g.min_q_len, std::min<int64_t>(g.max_q_len, 64));
    g.max_head_dim = std::max(g.min_head_dim, std::min<int64_t>(g.max_head_dim, 64));
    g.max_value_dim = std::min<int64_t>(g.max_value_dim, 64);
  };
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.kv_broadcast()) return Verdict::not_applicable("k and v dense (no axis to expand)");
    const Outcome expanded = impl.run(p);
    if (auto bad = unusable(expanded)) return *bad;
    const Problem dense = materialized(p);
    const Outcome plain = impl.run(dense);
    if (auto bad = unusable(plain)) return *bad;
    const OracleResult o = oracle(p);
    std::vector<int64_t> same(static_cast<std::size_t>(p.shape.batch));
    for (int64_t b = 0; b < p.shape.batch; ++b) same[b] = b;
    if (auto m = rows_differ({p, expanded, o, "expanded"}, {dense, plain, o, "materialized"}, same, false))
      return Verdict::fail("the call with k_broadcast " + std::to_string(p.k_broadcast) + " and v_broadcast " +
                           std::to_string(p.v_broadcast) +
                           " (1: stride 0 over batch entries, 2: over kv heads) differs from the same values "
                           "materialized: " + *m)
          .on({{"expanded", "", p}, {"materialized", "the case's k and v sent dense, every entry and head its own", dense}});
    bool any_row = false;
    for (int64_t b = 0; b < p.shape.batch; ++b) any_row = any_row || p.q_len_of(b) > 0;
    if (!any_row) return Verdict::not_applicable("no batch entry has a query row");
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
