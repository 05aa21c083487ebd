// bounds_inert (ABI v3, "Packed batches"): q_len and kv_len of a packed call
// are bounds on the slots (FlashAttention's max_seqlen_q/k), and "a larger
// bound must not change anything beyond the bound" (docs/abi/plugin-abi-v3.md,
// "Slots, lengths and what exists"). The case again with larger bounds, every
// sequence's slot, lengths, rows and keys as they were: kv_len 128 to 191 keys
// more (at least one more whole block of 128 keys, so that a split count or
// a tile count derived from the bound changes) and q_len 1 to 72 rows more;
// out rows and lse must agree: bit for bit when the implementation promises
// ATTNCHECK_PROMISE_BATCH_INVARIANT (which lets q_len and kv_len differ),
// else within the sum of the two calls' bounds, NaN in one only a
// difference. A packed side's bound grows alone (its buffers keep their
// total rows); a padded side grows only where its lengths are given (q_lens,
// kv_lens: its new rows and keys are padding, NaN), else it keeps its bound
// (its slots are its bound). The mask and bias follow the bounds' shape
// ([batch][heads][q_len][kv_len]): their new entries allow, or are 0.
//
// Catches: a split-KV count derived from max_seqlen_k with a split past a
// sequence's keys mishandled (0/0 in the empty split's normalisation, a
// combine that lets an uninitialised split in: vllm-project/flash-attention
// #190 pre-initialises lse_accum and out_accum for that); sequence b placed
// at b*q_len (b*kv_len) in a packed buffer; the bound taken for a slot's
// length (padding or the next sequence's rows attended, rows past the slot
// written); per-batch strides of the mask, bias or lse taken from the slots'
// largest length instead of the bounds; last bits that follow the bounds
// under the promise (a tile or split count chosen from max_seqlen).
// Cannot catch: a fault the larger bounds keep (the same wrong result at
// both bounds: matches_oracle judges that); a dependence on bounds beyond
// the 191 keys and 72 rows added; paged keys or stored K and V formats, whose
// pool and scales follow kv_len (not drawn here); a case with no query row
// (not applicable).
#include <cstdint>
#include <sstream>
#include <vector>

#include "law_framework/law_support.h"
#include "law_framework/packed_calls.h"
#include "problem/transforms.h"

namespace attncheck {

Law law_bounds_inert() {
  Law law;
  law.name = "bounds_inert";
  law.statement = "larger q_len/kv_len bounds (max_seqlen) of a packed call change no out row or lse (bit for bit "
                  "under BATCH_INVARIANT)";
  law.features = kAllFeatures | kPackedFeature;
  law.required = kPackedFeature;
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.packed()) return Verdict::not_applicable("not packed");
    if (p.paged() || p.kv_formatted())
      return Verdict::not_applicable("paged keys or stored K and V formats (their pool and scales follow kv_len)");
    bool any_row = false;
    for (int64_t b = 0; b < p.shape.batch; ++b) any_row = any_row || p.q_len_of(b) > 0;
    if (!any_row) return Verdict::not_applicable("every sequence has 0 query rows");
    const uint64_t salt = problem_fingerprint(p);
    const bool grow_q = p.packed_q() || !p.q_lens.empty(), grow_k = p.packed_k() || !p.kv_lens.empty();
    const int64_t more_q = grow_q ? 1 + static_cast<int64_t>((salt >> 3) % 72) : 0;
    const int64_t more_k = grow_k ? 128 + static_cast<int64_t>((salt >> 11) % 64) : 0;
    const Outcome drawn = impl.run(p);
    if (auto bad = unusable(drawn)) return *bad;
    const Problem raised = with_bounds_raised(p, more_q, more_k);
    const Outcome again = impl.run(raised);
    if (auto bad = unusable(again)) return *bad;
    const bool bitwise = (impl.promises() & ATTNCHECK_PROMISE_BATCH_INVARIANT) != 0;
    std::vector<int64_t> same(static_cast<std::size_t>(p.shape.batch));
    for (int64_t b = 0; b < p.shape.batch; ++b) same[static_cast<std::size_t>(b)] = b;
    std::ostringstream how;
    how << "the case with q_len " << raised.shape.q_len << " (was " << p.shape.q_len << ") and kv_len "
        << raised.shape.kv_len << " (was " << p.shape.kv_len
        << "), every slot, length, row and key kept, the new padding NaN";
    const std::string name = "with larger bounds";
    if (auto m = rows_differ({p, drawn, oracle(p), "as drawn"}, {raised, again, oracle(raised), name.c_str()}, same,
                             bitwise, "though the implementation promises ATTNCHECK_PROMISE_BATCH_INVARIANT"))
      return Verdict::fail("larger bounds (q_len " + std::to_string(raised.shape.q_len) + ", kv_len " +
                           std::to_string(raised.shape.kv_len) + ") changed the result: " + *m)
          .on({{"as drawn", "", p}, {name, how.str(), raised}});
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
