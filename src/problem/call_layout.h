// The bytes of one ABI call laid out in a single region, so the same layout
// serves an in-process buffer and a shared-memory mapping for a child process.
//
//   [q][k][v][mask][guard | out | guard]
//
// `out` is poisoned before the call with a signalling-NaN pattern that no
// arithmetic produces, and surrounded by guard zones of a known byte pattern;
// inputs are compared with their encoding after the call. So every process
// fault (unwritten element, write outside out) is seen without trusting the callee.
#pragma once

#include <cstddef>
#include <cstdint>

#include "problem/outcome.h"
#include "problem/problem.h"

namespace attncheck {

struct CallLayout {
  static constexpr std::size_t kGuardBytes = 4096;
  static constexpr std::size_t kAlign = 64;
  std::size_t q = 0, k = 0, v = 0, mask = 0, guard_before = 0, out = 0, guard_after = 0;
  std::size_t q_bytes = 0, k_bytes = 0, v_bytes = 0, mask_bytes = 0, out_bytes = 0;
  std::size_t total = 0;
};

CallLayout layout_for(const Problem& p);

// Writes inputs, poison and guards into `base` (layout.total bytes, 64-aligned).
void encode_call(const Problem& p, const CallLayout& layout, uint8_t* base);

// The ABI view of the encoded call at `base` (pointers into that region).
attncheck_call abi_call(const Problem& p, const CallLayout& layout, uint8_t* base);

// After the call returned ATTNCHECK_OK: checks guards, inputs and poison, decodes out.
Outcome decode_call(const Problem& p, const CallLayout& layout, const uint8_t* base);

// Maps a forward return code and err text to an Outcome (decoding when OK).
Outcome outcome_from_return(int rc, const char* err, const Problem& p, const CallLayout& layout,
                            const uint8_t* base);

}  // namespace attncheck
