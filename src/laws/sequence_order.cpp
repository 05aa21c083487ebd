// sequence_order (ABI v3, "Packed batches"): permuting the sequences of a
// packed batch permutes their results. The case's sequences are reordered
// (problem/transforms.h's mixing_permutation of the batch, drawn from the
// case: reversed, then rotated), each with its rows, keys, lengths, per-batch
// mask and bias entries, and the packed slots rebuilt in the new order (the
// same total_q/total_k and slack); sequence b's out rows and lse must be the
// same at its new place. Bit for bit when the implementation promises
// ATTNCHECK_PROMISE_BATCH_INVARIANT (b's place in the batch and in the packed
// buffers is among what the promise lets differ), else within the sum of the
// two calls' bounds, NaN in one only a difference (docs/abi/plugin-abi-v3.md:
// the spec names BATCH_INVARIANT for this law rather than the rerun rule of
// the comparisons of calls with the same inputs at the same places, since a
// deterministic kernel may schedule a sequence differently at another place).
//
// Catches: per-sequence quantities looked up by a sequence's position in a
// schedule instead of its index (a varlen scheduler that sorts sequences by
// length, FlashAttention-3's "virtual batch index", Dao-AILab/flash-attention
// #1823, whose maps the combine must read), outputs written in the sorted
// order and never put back, sequence b's rows read or written at another
// sequence's cu_seqlens, lse written into another sequence's slot
// (FlashAttention#2842), anything that holds only for sequences in the order
// drawn (lengths increasing, the longest first).
// Cannot catch: a fault that moves with the sequences (every sequence
// computed wrong the same way: matches_oracle judges that); one that needs a
// permutation other than the one drawn; a batch of one sequence, or one whose
// moved sequences have no query row (not applicable: the case says nothing).
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <vector>

#include "law_framework/law_support.h"
#include "law_framework/packed_calls.h"
#include "problem/transforms.h"

namespace attncheck {

Law law_sequence_order() {
  Law law;
  law.name = "sequence_order";
  law.statement = "permuting the sequences of a packed batch permutes their out rows and lse (bit for bit under "
                  "BATCH_INVARIANT)";
  law.features = kAllFeatures | kPackedFeature;
  law.required = kPackedFeature;
  // A batch of one sequence has no order: draw two or more where the options allow.
  law.tailor = [](GenOptions& g) {
    if (g.max_batch >= 2) g.min_batch = std::max<int64_t>(g.min_batch, 2);
  };
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.packed()) return Verdict::not_applicable("not packed");
    const int64_t n = p.shape.batch;
    if (n < 2) return Verdict::not_applicable("one sequence: nothing to reorder");
    const std::vector<int64_t> order = mixing_permutation(n, problem_fingerprint(p));
    // Sequence order[t] goes to place t; where each sequence of the case lands.
    std::vector<int64_t> at(static_cast<std::size_t>(n));
    bool moved = false;
    for (int64_t t = 0; t < n; ++t) {
      at[static_cast<std::size_t>(order[t])] = t;
      moved = moved || (order[t] != t && p.q_len_of(order[t]) > 0);
    }
    if (!moved) return Verdict::not_applicable("no sequence with a query row changes place");
    const Outcome drawn = impl.run(p);
    if (auto bad = unusable(drawn)) return *bad;
    const Problem permuted = with_sequences_permuted(p, order);
    const Outcome again = impl.run(permuted);
    if (auto bad = unusable(again)) return *bad;
    const bool bitwise = (impl.promises() & ATTNCHECK_PROMISE_BATCH_INVARIANT) != 0;
    std::ostringstream how;
    how << "the case's sequences in the order";
    for (int64_t t = 0; t < n; ++t) how << (t ? ", " : " ") << order[t];
    how << ", each with its rows, keys, lengths and entries, the packed slots rebuilt in that order";
    if (auto m = rows_differ({p, drawn, oracle(p), "as drawn"}, {permuted, again, oracle(permuted), "reordered"}, at,
                             bitwise, "though the implementation promises ATTNCHECK_PROMISE_BATCH_INVARIANT"))
      return Verdict::fail("reordering the sequences changed a sequence's result: " + *m)
          .on({{"as drawn", "", p}, {"reordered", how.str(), permuted}});
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
