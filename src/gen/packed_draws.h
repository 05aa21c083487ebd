// Drawing and shrinking ABI v3's packed batches (problem.h, "ABI v3: packed
// batches"; docs/abi/plugin-abi-v3.md, "Packed batches"): for an
// implementation that declares PACKED and a law whose features name it, the
// query side, the key side or both are packed, each sequence's slot drawn
// between its length (q_lens / kv_lens, else 0) and the bound (q_len / kv_len),
// so empty sequences (slots of 0 rows) and slots longer than their lengths
// (padding inside a slot) both come, and 0 to 3 slack rows follow cu[batch].
// A packed side's views are dense [total][heads][dim] (its layouts reset).
// Nothing is drawn without kPackedFeature in GenOptions::features, so every
// seed of every other law draws what it always drew.
//
// Example usage (inside draw_late_features, after everything else):
//   if (!p.is_backward() && want(kPackedFeature, 0.5)) draw_packing(r, p);
#pragma once

#include <vector>

#include "gen/choice_source.h"
#include "problem/problem.h"

namespace attncheck::gen {

template <class C>
void draw_packing(C& r, Problem& p);
extern template void draw_packing(RandomChoices&, Problem&);
extern template void draw_packing(ByteChoices&, Problem&);

// Shrink candidates of the packing, most drastic first: a side unpacked
// (its slots given back as q_lens / kv_lens, so the sequences stay what they
// were), then the slack dropped. Fewer sequences come from the shape's cuts
// (restricted() re-packs the kept slots).
void shrink_packing(const Problem& p, std::vector<Problem>& out);

}  // namespace attncheck::gen
