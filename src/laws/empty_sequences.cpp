// empty_sequences (ABI v3, "Packed batches"): a sequence of length 0 changes
// nothing for the others and writes nothing. For each sequence e of a packed
// case that has no query rows (Lq = 0) or no keys (Lk = 0): the case without
// it gives the other sequences' out and lse (bit for bit when the
// implementation reruns the case bit for bit, else within the bounds), and a
// sequence with rows but no keys gets out = 0 and lse = its sink (-inf
// without sinks), exactly. That it writes nothing (no row of its own, a
// packed slot of 0 rows) is the call encoding's guard: a write there lands in
// a neighbour's rows (seen here) or in slack (an out_of_bounds_write).
//
// Catches: an empty sequence treated as one row (FlashAttention#2842 wrote
// its lse into the next slot), its query rows computed against the next
// sequence's keys, cu[b] == cu[b+1] read as "the rest of the buffer".
// Cannot catch: a fault that the same batch without the empty sequence has
// too; cases with no empty sequence (not applicable).
#include <cmath>
#include <limits>

#include "law_framework/law_support.h"
#include "law_framework/packed_calls.h"

namespace attncheck {

namespace {

// Rows of sequence e that see no key because it has none: out exactly 0, lse its sink.
std::optional<std::string> keyless_rows_wrong(const Problem& p, const Outcome& o, int64_t e) {
  const Shape& s = p.shape;
  for (int64_t h = 0; h < s.heads; ++h)
    for (int64_t i = 0; i < p.q_len_of(e); ++i) {
      const int64_t bh = e * s.heads + h;
      for (int64_t c = 0; c < s.value_dim; ++c)
        if (const double x = o.out[p.out_at(bh, i, c)]; x != 0)
          return "out " + output_element(p, p.out_at(bh, i, c)) + " = " + num(x) + " in sequence " + std::to_string(e) +
                 ", which has no keys (it must be 0)";
      if (o.lse.empty()) continue;
      const double got = o.lse[bh * s.q_len + i], want = static_cast<double>(static_cast<float>(p.sink_of(bh)));
      if (!(got == want))
        return "lse " + output_row(p, bh, i) + " = " + num(got) + " in sequence " + std::to_string(e) +
               ", which has no keys (it must be " + num(want) + ")";
    }
  return std::nullopt;
}

}  // namespace

Law law_empty_sequences() {
  Law law;
  law.name = "empty_sequences";
  law.statement = "a packed sequence of length 0 changes nothing for the others; one without keys gets out 0, lse its sink";
  law.features = kAllFeatures | kPackedFeature;
  law.required = kPackedFeature;
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.packed()) return Verdict::not_applicable("not packed");
    const Outcome whole = impl.run(p);
    if (auto bad = unusable(whole)) return *bad;
    bool bitwise = false, judged = false;
    if (auto bad = rerun_is_bitwise(impl, p, whole, bitwise)) return *bad;
    const OracleResult o = oracle(p);
    for (int64_t e = 0; e < p.shape.batch; ++e) {
      if (p.q_len_of(e) > 0 && p.kv_len_of(e) > 0) continue;
      judged = true;
      if (p.kv_len_of(e) == 0)
        if (auto m = keyless_rows_wrong(p, whole, e)) return Verdict::fail(*m);
      const std::optional<Problem> rest = without_sequence(p, e);
      if (!rest) continue;
      const Outcome without = impl.run(*rest);
      if (auto bad = unusable(without)) return *bad;
      const OracleResult ro = oracle(*rest);
      std::vector<int64_t> map(static_cast<std::size_t>(p.shape.batch));
      for (int64_t b = 0; b < p.shape.batch; ++b) map[b] = b == e ? -1 : b < e ? b : b - 1;
      if (auto m = rows_differ({p, whole, o, "beside the empty sequence"}, {*rest, without, ro, "without it"}, map, bitwise))
        return Verdict::fail("an empty sequence changed its neighbours: " + *m)
            .on({{"with it", "", p}, {"without it", "the case without its empty sequence " + std::to_string(e), *rest}});
    }
    if (!judged) return Verdict::not_applicable("no sequence of length 0");
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
