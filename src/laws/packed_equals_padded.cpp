// packed_equals_padded (ABI v3, "Packed batches"): the same sequences packed
// (cu_seqlens_q/k, q and out [total_q][heads][dim], k and v [total_k]...) and
// padded (the slots' lengths as q_lens / kv_lens) give, row for row, the same
// out and lse: bit for bit when the implementation reruns the case bit for
// bit, else within the sum of the two calls' bounds (the oracle's bound is
// the same for both: a packed call is the padded one, sequence by sequence).
//
// Catches: sequence b read at b*q_len (b*kv_len) instead of cu[b], cu read as
// lengths instead of prefix sums, one sequence's slot length applied to
// another, an empty sequence treated as one row, rows of a packed side
// stepped by the padded strides. Cannot catch: a fault that the padded call
// has too (matches_oracle judges that), or an implementation that refuses the
// padded form (lengths) of every drawn case: not applicable, never passed.
#include "law_framework/law_support.h"
#include "law_framework/packed_calls.h"

namespace attncheck {

Law law_packed_equals_padded() {
  Law law;
  law.name = "packed_equals_padded";
  law.statement = "a packed batch (cu_seqlens) gives, row for row, the out and lse of the same sequences padded";
  law.features = kAllFeatures | kPackedFeature;
  law.required = kPackedFeature;
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.packed()) return Verdict::not_applicable("not packed");
    const Outcome packed = impl.run(p);
    if (auto bad = unusable(packed)) return *bad;
    bool bitwise = false;
    if (auto bad = rerun_is_bitwise(impl, p, packed, bitwise)) return *bad;
    const Problem twin = padded_twin(p);
    const Outcome padded = impl.run(twin);
    if (auto bad = unusable(padded)) return *bad;
    const OracleResult po = oracle(p), to = oracle(twin);
    std::vector<int64_t> same(static_cast<std::size_t>(p.shape.batch));
    for (int64_t b = 0; b < p.shape.batch; ++b) same[b] = b;
    if (auto m = rows_differ({p, packed, po, "packed"}, {twin, padded, to, "padded"}, same, bitwise))
      return Verdict::fail("the packed call differs from the same sequences padded: " + *m)
          .on({{"packed", "", p}, {"padded", "the case's sequences padded, each slot's length as q_lens/kv_lens", twin}});
    bool any_row = false;
    for (int64_t b = 0; b < p.shape.batch; ++b) any_row = any_row || p.q_len_of(b) > 0;
    if (!any_row) return Verdict::not_applicable("every sequence has 0 query rows");
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
