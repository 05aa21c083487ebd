// Transforms that trade one ABI v2 feature for an equivalent plainer call (or
// change it in a way whose effect is known exactly): the v2 laws compare an
// implementation's answer on a problem with its answer on the transformed one.
// Each keeps every other feature of the problem as it is.
//
// Example usage (law gqa_equals_repeated_kv):
//   const Problem plain = with_kv_heads_repeated(p);   // kv_heads == heads
//   ... run both, compare within each one's bound ...
#pragma once

#include <cstdint>
#include <optional>

#include "problem/problem.h"

namespace attncheck {

// kv_heads = heads: every query head gets its own copy of the K and V head it
// reads (k, v [batch][heads][kv_len][dim]).
Problem with_kv_heads_repeated(const Problem& p);

// The same problem with the given view layouts (the logical tensors unchanged).
Problem with_layouts(const Problem& p, const ViewLayouts& layouts);

// Sequence b alone: batch 1, q_len = q_lens[b], kv_len = kv_lens[b], no
// lengths; mask and bias sliced (kept broadcast where they were). nullopt when
// the sequence has no row or no key (nothing to compare there).
std::optional<Problem> sequence_alone(const Problem& p, int64_t b);

// Padding rows and keys of q, k, v (and the mask and bias entries at them,
// where those are stored per row) set to `value` (NaN, or a huge number).
Problem with_padding_filled(const Problem& p, double value);

// No window; a mask that also hides what the window hid (full mask).
Problem with_window_as_mask(const Problem& p);

// No ALiBi; a full bias that adds -slope[h] * |d_i - j| (rounded to the dtype)
// to the bias (or to zero).
Problem with_alibi_as_bias(const Problem& p);

// No sinks; one more key at the end (k = 0, v = 0) whose bias is the sink, so
// its logit is the sink for every row (the soft-cap maps the logit 0 to 0).
// Only for problems where a key appended at the end is visible to every row
// and moves nothing else: no causal rule, no window, no lengths, no ALiBi.
// nullopt otherwise, or where a sink is not representable in the dtype.
std::optional<Problem> with_sink_as_key(const Problem& p);

// Adds a constant to every bias entry of each row (full bias): c, 2c or 3c by
// row (row r of [batch][heads][q_len] gets c * (1 + r % 3)), so a bias read
// with the wrong row stride sees different constants. nullopt when some entry
// plus its constant is not exact in the dtype.
std::optional<Problem> with_row_bias_shifted(const Problem& p, double c);

}  // namespace attncheck
