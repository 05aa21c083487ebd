// Exact rewrites of a Problem that laws, fault models and the shrinker build
// on: masks ANDed with a predicate, a causal rule turned into the equivalent
// explicit mask, permuting keys or query rows, cutting out ranges or one
// (batch, head), a row's exact logits, and a fingerprint that lets a law draw
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
#include <functional>
#include <vector>

#include "problem/problem.h"

namespace attncheck {

// Query i of head bh may see key j: the predicate masks and fault models take.
using KeyPredicate = std::function<bool(int64_t bh, int64_t i, int64_t j)>;

// The same problem (causal rule kept) with a mask that allows exactly what p's
// mask allowed and `allow` allows (mask [batch][heads][q_len][kv_len]).
Problem with_mask_anded(const Problem& p, const KeyPredicate& allow);

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

// The single (batch, head) bh = b * heads + h of p as a batch = heads = 1
// problem: its q rows, the kv head it reads (grouped heads: its group's), its
// mask and bias rows (broadcast kept), its batch's lengths, its head's ALiBi
// slope and sink, its dout rows.
Problem head_alone(const Problem& p, int64_t bh);

// Leading batches and heads, a window of query rows and of keys, and the
// leading head and value dimensions of p. The mask and bias are cut alike (in
// their broadcast), lengths are clamped to the kept window, ALiBi slopes and
// sinks kept for the kept heads, dout (of a backward problem) cut as q's rows
// and out's columns. Grouped kv heads stay grouped when whole
// groups are kept; otherwise every kept query head gets a copy of its kv head
// (the same call, without GQA).
struct Ranges {
  int64_t batches, heads;
  int64_t q_begin, q_count;
  int64_t k_begin, k_count;
  int64_t head_dims, value_dims;
};
Problem restricted(const Problem& p, const Ranges& r);

// The same call without GQA: kv_heads = heads, every query head's kv head
// copied out (k [batch][heads][kv_len][head_dim], v alike).
Problem with_kv_repeated(const Problem& p);

// Keys [begin, begin + count) of every head: rows of K and V, mask columns.
Problem with_keys(const Problem& p, int64_t begin, int64_t count);

// The same problem with V = columns [first, first + value_dim) of the
// kv_len x kv_len identity in every head: V[j][c] = 1 where j = first + c.
// Output column c is then the weight of key first + c, [b][h][q_len][value_dim].
Problem with_identity_block(const Problem& p, int64_t first, int64_t value_dim);
// The whole identity (value_dim = kv_len): the output is the weight matrix P
// [b][h][q_len][kv_len].
Problem with_identity_values(const Problem& p);

// Exact logits scale * q_i . k_j of row (bh, i) accumulated in long double,
// -inf for keys the row does not see: [kv_len].
std::vector<long double> row_logits(const Problem& p, int64_t bh, int64_t i);
long double exact_logit(const Problem& p, int64_t bh, int64_t i, int64_t j);

// A permutation of [0, n) that is not the identity when n >= 2: the reversal
// followed by a rotation chosen by `salt`, so both ends of the range and tile
// boundaries move. For n == 1, {0}.
std::vector<int64_t> mixing_permutation(int64_t n, uint64_t salt);

// A 64-bit hash of everything in the problem (dtype, shape, rule, scale,
// tensor bits, mask): the seed of companions a law derives from it.
uint64_t problem_fingerprint(const Problem& p);

}  // namespace attncheck
