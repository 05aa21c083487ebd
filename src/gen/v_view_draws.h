// Drawing and shrinking ABI v3's V as a view of K (problem.h, "V as a view of
// K"; docs/abi/plugin-abi-v3.md, "V as a view of K" and "MLA"): for an
// implementation that declares V_VIEW_OF_K and a law whose features name it, a
// forward problem (padded, packed or paged keys) makes v the first value_dim
// channels of k: value_dim clamped to head_dim (and, three times in five when
// they are equal, drawn below it so that v's rows are narrower than k's, the
// form whose stride a kernel can get wrong), a whole number of K's format's
// units when K is stored in one (V then takes K's format, granularity and the
// scales its view reads; K in the dtype puts V back in it), v's values copied from
// k's channels (padding keys too: the call sends them as the same bytes),
// layouts.v set to layouts.k. When the law requires the view (GenOptions::required)
// a small problem that is neither paged nor stored (padded or packed keys, any layout) becomes
// DeepSeek's MLA shape one time in four: one kv
// head, head_dim 576 (512 latent + 64 rope channels), value_dim 512 and the
// explicit scale 1/sqrt(192) FlashInfer's test uses, q and k redrawn at that
// width (only where batch * heads * q_len * kv_len <= 2048 keys: a 576-wide
// case costs the oracle about 8 times a 72-wide one). Nothing is drawn without
// kVViewFeature in GenOptions::features, so every other law's seeds draw what
// they drew.
//
// Example usage (inside draw_late_features, after the formats):
//   if (!p.is_backward() && want(kVViewFeature, 0.5)) draw_v_view(o, r, p);
#pragma once

#include <vector>

#include "gen/choice_source.h"
#include "gen/gen_options.h"
#include "problem/problem.h"

namespace attncheck::gen {

template <class C>
void draw_v_view(const GenOptions& o, C& r, Problem& p);
extern template void draw_v_view(const GenOptions&, RandomChoices&, Problem&);
extern template void draw_v_view(const GenOptions&, ByteChoices&, Problem&);

// v made k's first value_dim channels (value_dim <= head_dim), with k's layout.
void make_v_a_view_of_k(Problem& p);

// Shrink candidate of the view: V copied to its own memory (its layout's
// order and gaps kept), its values unchanged. Nothing for a problem without it.
void shrink_v_view(const Problem& p, std::vector<Problem>& out);

}  // namespace attncheck::gen
