// Sequences taken out of a case and composed into other batches: what
// batch_composition_independence (within the bound, or bit for bit under ABI
// version 3's BATCH_INVARIANT) and batch_invariance (bit for bit,
// with other bounds too) build and compare. Calls of version 2's shape: not
// packed, not paged, K and V in the call's dtype.
//
// Example usage:
//   std::vector<Problem> alone{entry_alone(p, 0)}, parts = alone;
//   for (Problem& c : companions(alone, loud_value(p), lengths, salt, 5)) parts.push_back(std::move(c));
//   std::vector<int64_t> at;
//   const Problem composed = placed_batch(parts, mixing_permutation(5, salt), at);
//   ... run both; entry_mismatch(composed, whole, at[0], alone[0], one, &oracle(alone[0]), judged)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "oracle/oracle.h"
#include "problem/outcome.h"
#include "problem/problem.h"

namespace attncheck {

// Batch entry b of p as a batch-1 problem with p's extents: q, k, v, its mask
// and bias (broadcast kept), its lengths.
Problem entry_alone(const Problem& p, int64_t b);

// The batch-1 problems `parts` (same extents and features but for lengths) as
// one batch, in order. A mask or bias broadcast over the batch is the same in
// every part and stays broadcast; lengths are written out for every part when
// any part has them.
Problem composed_batch(const std::vector<Problem>& parts);

// A power of two c such that q = c and k = c (signed as the scale) make every
// logit of a neighbour far above the case's own (a max shared with it leaves
// the case's weights below every dtype's smallest value); 1 when the case's
// values leave no room.
double loud_value(const Problem& p);

// The companions of the case's sequences `alone`: one loud neighbour always;
// then, up to `target` sequences in all, cycling over the case's sequences:
// of other values, loud, shorter (when `lengths`: the implementation has them).
std::vector<Problem> companions(const std::vector<Problem>& alone, double loud, bool lengths, uint64_t salt,
                                int64_t target);

// The parts as one batch, part n at position order[n] (so at[n] is where part n landed).
Problem placed_batch(const std::vector<Problem>& parts, const std::vector<int64_t>& order, std::vector<int64_t>& at);

// Compares sequence `alone` with entry `at` of `composed`: the outputs within
// twice the alone call's bound `one_o` (the rows are the same rows, so the
// composed call's bound for them is the same), the lse where requested; bit
// for bit (NaN equals NaN) when one_o is nullptr. Counts the judged elements
// in `judged`; the message of the first difference ("at <element>: ...").
std::optional<std::string> entry_mismatch(const Problem& composed, const Outcome& whole, int64_t at,
                                          const Problem& alone, const Outcome& one, const OracleResult* one_o,
                                          int64_t& judged);

}  // namespace attncheck
