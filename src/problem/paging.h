// Exact transforms of ABI v3's paged keys (problem.h, "ABI v3: paged keys"):
// the same sequences with their keys in other pages. Each keeps the logical
// k and v (so the oracle's result and bound are unchanged) and gives a
// consistent problem when given one.
//
// Example usage (a paged law):
//   const Problem twin = unpaged(p);                 // the same keys padded
//   const Problem small = paged_plainly(p, 1);       // one key a page
//   const Problem moved = pages_renamed(p, perm);    // page g becomes perm[g]
#pragma once

#include <cstdint>
#include <vector>

#include "problem/problem.h"

namespace attncheck {

// The same keys padded: every paging field neutral.
Problem unpaged(const Problem& p);

// The keys paged in order with `page_size` keys a page and no aliases:
// sequence b's ceil(Lk / page_size) pages are fresh and follow sequence
// b - 1's; max_pages_per_seq = ceil(kv_len / page_size); the entries past a
// sequence's pages name page 0 (another sequence's, or poison). At least
// one page. The poison code is p's (0 for an unpaged p).
Problem paged_plainly(const Problem& p, int64_t page_size);

// The pool's pages relabelled: page g of p is page perm[g] (a permutation of
// 0..num_pages-1), every table entry rewritten. Bit for bit the same call.
Problem pages_renamed(const Problem& p, const std::vector<int32_t>& perm);

// Slots (page * page_size + slot) some sequence reads as a live key.
std::vector<bool> live_slots(const Problem& p);

// A live key whose page slot a key before it already read (aliased pages): key j of
// sequence b and the slot's first reader, key j0 of sequence b0 (first in the order of
// b, then j). Their k and v must hold the same bits (Problem::inconsistency); the
// generator makes them so.
struct AliasedKey {
  int64_t b, j, b0, j0;
};
std::vector<AliasedKey> aliased_keys(const Problem& p);

}  // namespace attncheck
