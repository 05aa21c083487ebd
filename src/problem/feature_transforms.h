// Transforms that trade one ABI v2 feature for an equivalent plainer call (or
// change it in a way whose effect is known exactly): the v2 laws compare an
// implementation's answer on a problem with its answer on the transformed one.
// Each keeps every other feature of the problem as it is.
//
// Example usage (law window_equals_mask):
//   const Problem plain = with_window_as_mask(p);   // no window, a full mask
//   ... run both, compare within each one's bound ...
// (GQA's plain form, with_kv_repeated, lives in problem/transforms.h.)
#pragma once

#include <cstdint>
#include <optional>

#include "problem/problem.h"

namespace attncheck {

// The same problem with the given view layouts (the logical tensors unchanged).
Problem with_layouts(const Problem& p, const ViewLayouts& layouts);

// Sequence b alone: batch 1, q_len = q_lens[b], kv_len = kv_lens[b], no
// lengths; mask and bias sliced (kept broadcast where they were). nullopt when
// the sequence has no row or no key (nothing to compare there).
std::optional<Problem> sequence_alone(const Problem& p, int64_t b);

// Padding rows and keys of q, k, v set to `value` (NaN, or a huge number),
// and the bias entries that only padding reads (for a finite value: a bias
// holds no NaN outside NaN laws).
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
