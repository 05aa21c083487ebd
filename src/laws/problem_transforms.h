// Exact rewrites of a Problem that several metamorphic laws build on: turning
// a causal rule into the equivalent explicit mask, permuting keys or query
// rows, cutting out one (batch, head), and a fingerprint that lets a law draw
// "random" companions deterministically from the problem itself (so a case
// replays and shrinks to the same verdict).
//
// Every transform here is exact: the result holds only values already in the
// problem, so no rounding enters and a law may expect an exact relation.
//
// Example usage (key_permutation_invariance):
//   const Problem base = with_causal_as_mask(p);
//   const Problem moved = with_keys_permuted(base, mixing_permutation(p.shape.kv_len, problem_fingerprint(p)));
#pragma once

#include <cstdint>
#include <vector>

#include "problem/problem.h"

namespace attncheck {

// The same problem with causal = none and a mask that allows exactly the keys
// the causal rule and the old mask allowed (mask [batch][heads][q_len][kv_len]).
// A problem without a causal rule comes back unchanged.
Problem with_causal_as_mask(const Problem& p);

// Key j of the result is key perm[j] of p: rows of K [.., kv_len, head_dim],
// V [.., kv_len, value_dim] and columns of the mask move together.
// The causal rule must be none (call with_causal_as_mask first).
Problem with_keys_permuted(const Problem& p, const std::vector<int64_t>& perm);

// Query row i of the result is row perm[i] of p: rows of Q [.., q_len, head_dim]
// and of the mask. Output row i then equals p's output row perm[i].
// The causal rule must be none.
Problem with_queries_permuted(const Problem& p, const std::vector<int64_t>& perm);

// The single (batch, head) bh = b * heads + h of p as a batch = heads = 1 problem.
Problem head_alone(const Problem& p, int64_t bh);

// A permutation of [0, n) that is not the identity when n >= 2: the reversal
// followed by a rotation chosen by `salt`, so both ends of the range and tile
// boundaries move. For n == 1, {0}.
std::vector<int64_t> mixing_permutation(int64_t n, uint64_t salt);

// A 64-bit hash of everything in the problem (dtype, shape, rule, scale,
// tensor bits, mask): the seed of companions a law derives from it.
uint64_t problem_fingerprint(const Problem& p);

}  // namespace attncheck
