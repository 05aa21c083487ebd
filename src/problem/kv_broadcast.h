// ABI v3's broadcast K and V (docs/abi/plugin-abi-v3.md, "Broadcast K and V"):
// k or v expanded over batch entries (stride 0 on the view's axis 0) or over
// kv heads (axis 1), as PyTorch's expand makes them. The Problem keeps k and v
// logical, [batch][kv_heads][kv_len][dim], with equal values across each
// broadcast axis; the call layout sends one slice with stride 0 there
// (call/call_layout.cpp).
//
// Example usage (the generator, a law):
//   expand_kv(p, /*is_k=*/true, kKvBroadcastHeads);  // every kv head reads head 0's keys
//   const Problem dense = materialized(p);            // the same values, no stride 0
#pragma once

#include <cstdint>
#include <string>

#include "problem/problem.h"

namespace attncheck {

inline constexpr int64_t kKvBroadcastBatch = 1, kKvBroadcastHeads = 2;

// k (or v) made equal across the axes `how` names, bit for bit, from one
// source slice: kv head 0, and over batch entries the entry with the most keys
// (its live keys are live or padding everywhere else, never the reverse), and
// k_broadcast (v_broadcast) set to `how`.
void expand_kv(Problem& p, bool is_k, int64_t how);

// The same problem with k and v sent dense (their values as they are).
Problem materialized(const Problem& p);

// "" when k_broadcast and v_broadcast are within 0..3, used only where the
// spec allows (padded keys in the dtype, not a view of k, forward) and the
// values are equal across every broadcast axis; else what is wrong.
std::string kv_broadcast_inconsistency(const Problem& p);

}  // namespace attncheck
