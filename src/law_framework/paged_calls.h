// What the paged laws (page_permutation_bit_identical, paged_equals_contiguous,
// page_size_independence, dead_page_bytes_inert, unread_table_entries_inert, page_alias_equals_copy; ABI v3's
// "Paged caches") share: the calls they build from a paged case, each with the
// same logical keys (problem/paging.h: so the oracle's result and bound are
// the case's), and the one comparison of the case's call with each of them.
//
// Example usage (inside a law's check):
//   return compare_with_twins(impl, p, {{"renamed", "the pages relabelled", pages_renamed(p, perm)}},
//                             TwinRule::bitwise_if_rerun, "the page permutation changed the result");
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "law_framework/law.h"
#include "problem/problem.h"

namespace attncheck {

// A call built from the case: its name in a report, how it was built, the call.
struct PagedTwin {
  std::string name, how;
  Problem problem;
};

// How a twin must agree with the case: bit for bit when the implementation
// reruns the case bit for bit (else within the sum of the bounds, no NaN in
// one only: docs/abi/plugin-abi-v3.md, "Laws version 3 makes possible"), or
// within the bounds always.
enum class TwinRule { bitwise_if_rerun, within_bound };

// Runs the case (and again, for bitwise_if_rerun), then each twin, and fails
// on the first live row where a twin differs: `what` + ": " + the row.
// Not applicable when no sequence has a query row.
Verdict compare_with_twins(Implementation& impl, const Problem& p, const std::vector<PagedTwin>& twins, TwinRule rule,
                           const std::string& what);

// The case's table entries past each sequence's pages ("unread"), rewritten
// by `name_for(b, e, old)`; the rest of the case unchanged.
template <class F>
Problem with_unread_entries(const Problem& p, F&& name_for) {
  Problem r = p;
  for (int64_t b = 0; b < p.shape.batch; ++b)
    for (int64_t e = p.pages_used_by(b); e < p.max_pages_per_seq; ++e) {
      int32_t& entry = r.block_table[static_cast<std::size_t>(b * p.max_pages_per_seq + e)];
      entry = name_for(b, e, entry);
    }
  return r;
}

}  // namespace attncheck
