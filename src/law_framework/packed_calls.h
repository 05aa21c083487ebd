// The calls the packed laws (packed_equals_padded, slack_inert_and_untouched,
// empty_sequences, sequence_order, bounds_inert; ABI v3's "Packed batches")
// build from a packed case, and how they compare two calls that must agree.
//
// Example usage (inside a law's check):
//   const Problem padded = padded_twin(p);  // the same sequences, padded
//   if (auto m = rows_differ(p, a, b, bit_for_bit, "packed", "padded")) return Verdict::fail(*m);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "law_framework/law.h"
#include "oracle/oracle.h"
#include "problem/problem.h"

namespace attncheck {

// The same sequences padded: cu_seqlens and totals cleared, each packed
// side's slot lengths given as q_lens / kv_lens where the case had none (its
// own lengths, at most the slots, kept). The padded tensors are the case's.
Problem padded_twin(const Problem& p);

// The case with `extra` more slack rows on each packed side and every
// padding element of q, k and v (rows past a sequence's length: inside its
// packed slot, and past its slot) set to `fill`: bytes that must not
// influence anything.
Problem with_slack_refilled(const Problem& p, int64_t extra, double fill);

// The case without sequence e (batch - 1): its rows, keys, lengths, slots
// and per-batch mask and bias entries removed, the others in order, the slack
// kept. nullopt for a batch of one.
std::optional<Problem> without_sequence(const Problem& p, int64_t e);

// The case with its sequences reordered: sequence n of the result is
// sequence order[n] of p (order a permutation of [0, batch)), with its rows,
// keys, lengths, per-batch mask and bias entries, block-table row, per-batch
// ALiBi slopes and scales; cu_seqlens_q/k rebuilt from the slots in the new order
// (cu[batch] and the slack unchanged).
Problem with_sequences_permuted(const Problem& p, const std::vector<int64_t>& order);

// The case with larger bounds, q_len + more_q and kv_len + more_k
// (FlashAttention's max_seqlen_q/k): every sequence keeps its slot, lengths,
// rows and keys. The tensors' new rows and keys hold NaN (on a packed side
// they exist nowhere in the call; on a padded side they are padding), the
// mask's new entries allow, the bias's are 0. Only a side whose sequences keep
// their lengths may grow: a packed side, or a padded one with its lengths
// given (q_lens, kv_lens); the caller passes 0 for any other. Not for paged
// keys or stored K and V formats (their pool and scales follow kv_len).
Problem with_bounds_raised(const Problem& p, int64_t more_q, int64_t more_k);

// One output of a pair of calls that must agree: out [batch][heads][q_len][value_dim]
// and lse [batch][heads][q_len] (empty: none), the oracle of its problem, and
// which of its batch entries each compared entry is.
struct PackedSide {
  const Problem& problem;
  const Outcome& outcome;
  const OracleResult& oracle;
  const char* name;
};

// The first live row (of the batch entries map_b lists for a, b at map_b[b_a],
// -1: skipped) where a and b differ: bit for bit when `bit_for_bit`, else
// beyond the sum of their bounds (NaN in one only is a difference); the lse
// too where both have it. nullopt when they agree. `why_bitwise` ends the
// message of a bit difference: why bits were demanded.
std::optional<std::string> rows_differ(const PackedSide& a, const PackedSide& b, const std::vector<int64_t>& map_b,
                                       bool bit_for_bit,
                                       const char* why_bitwise = "though the implementation reruns the case bit for bit");

// Whether impl reran `p` bit for bit (out and lse): the laws then demand
// bit-identity of calls with the same real inputs (docs/abi/plugin-abi-v3.md,
// "Laws version 3 makes possible"). nullopt when the rerun was usable,
// else the verdict to return.
std::optional<Verdict> rerun_is_bitwise(Implementation& impl, const Problem& p, const Outcome& first, bool& bitwise);

}  // namespace attncheck
