// The second call of ABI version 3's determinism promises
// (docs/abi/plugin-abi-v3.md, "Promises"): "two calls that differ only in the
// addresses of their buffers and in bytes that must not influence anything".
// For the calls of version 2's shape the laws make today (not packed, not
// paged, K and V in the call's dtype) those bytes are the padding rows of q
// and dout (rows i >= Lq) and the padding keys of k and v (keys j >= Lk);
// slack, dead page slots and unread pages come with the packed and paged
// calls. The gaps of strided views stay NaN in both calls (call_layout.h
// writes them).
//
// Example usage:
//   const Problem again = with_dead_bytes_changed(p);
//   const Outcome second = run_with_buffers_moved(impl, again, moved_buffers_shift(problem_fingerprint(p)));
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "impls/implementation.h"
#include "problem/problem.h"

namespace attncheck {

// p with every padding element of q, k, v and dout (rows and keys beyond the
// lengths) replaced, in turn, by NaN, +inf, -inf, the dtype's largest finite
// value and its negation, so no dead element keeps its bits. p itself when
// it has no padding.
Problem with_dead_bytes_changed(const Problem& p);

// Whether p holds a padding row or key (something with_dead_bytes_changed changes).
bool has_dead_elements(const Problem& p);

// How far to move the buffers: 64 * (1 + salt % 127) bytes, a multiple of the
// call's alignment that changes the buffers' alignment to 128, 256, ... 4096.
std::size_t moved_buffers_shift(uint64_t salt);

// impl.run(p) with impl's buffers `shift` bytes further into its region
// (Implementation::shift_buffers), then back in place. An implementation
// that cannot move them answers "unsupported" without being called.
Outcome run_with_buffers_moved(Implementation& impl, const Problem& p, std::size_t shift);

// "with its buffers N bytes further and its padding changed (NaN, infinities,
// huge values)": how the second call differs, for messages.
std::string moved_call_text(const Problem& p, std::size_t shift);

}  // namespace attncheck
