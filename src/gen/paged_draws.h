// Drawing and shrinking ABI v3's paged keys (problem.h, "ABI v3: paged keys";
// docs/abi/plugin-abi-v3.md, "Paged caches"): for an implementation that
// declares PAGED and a law whose features name it, a forward problem's keys
// are paged with a page size from {1, 2, 3, 4, 5, 16, 64, 128, 256} (so a
// sequence is often shorter than one page), its pages numbered in a random
// permutation, about three pages in ten aliased (a page already given to this
// or another sequence's row: one page twice in a row, or in several rows),
// 0 to 2 more table entries than kv_len needs and 0 to 2 pages no sequence
// reads; each entry past a sequence's ceil(Lk / page_size) names any page
// (poisoned, or live for another sequence), and dead slots hold a drawn
// poison (NaN, +inf, -inf, huge). The VALUES of an aliased page are shared:
// a live slot's keys and values are those of the first sequence that reads
// it, copied into every other reader's logical k and v. The views of k and v
// become the pool, their layouts (drawn with STRIDES) ordering its axes
// (page, slot, kv head: call/paged_pool.h; dense NHD without). Nothing is drawn without
// kPagedFeature in GenOptions::features, so every other law's seeds draw what
// they drew.
//
// Example usage (inside draw_late_features, before the packing):
//   if (!p.is_backward() && want(kPagedFeature, 0.5)) draw_paging(r, p);
#pragma once

#include <vector>

#include "gen/choice_source.h"
#include "problem/problem.h"

namespace attncheck::gen {

template <class C>
void draw_paging(C& r, Problem& p);
extern template void draw_paging(RandomChoices&, Problem&);
extern template void draw_paging(ByteChoices&, Problem&);

// Shrink candidates of the paging, most drastic first: unpaged (the same
// keys padded), one key a page without aliases, the drawn page size without
// aliases, unread entries or unread pages (the fewest pages), the poison NaN.
void shrink_paging(const Problem& p, std::vector<Problem>& out);

}  // namespace attncheck::gen
