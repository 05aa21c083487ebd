// The diagnosis of an implementation that makes an ABI version 3 determinism
// promise (ATTNCHECK_PROMISE_DETERMINISTIC, _BACKWARD) and whose results move
// with its buffers: the same call in place repeats every bit, the call with
// its buffers a few 64-byte steps further does not (a path or a reduction
// order chosen by an address or an alignment). Such a kernel is as accurate
// as a correct one, so no fault model of a wrong value names it.
//
// Example usage (diagnose.cpp, before the fault models):
//   if (std::string d = diagnose_moved_buffers(impl, failing); !d.empty()) return d;
#pragma once

#include <string>

#include "impls/implementation.h"
#include "problem/problem.h"

namespace attncheck {

// "behaves like: a kernel whose last bits follow where its buffers lie (...)"
// when impl promises determinism for `failing` (a forward problem:
// DETERMINISTIC; a backward one: DETERMINISTIC_BACKWARD), repeats it in place
// bit for bit, and gives other bits with its buffers moved 64 to 512 bytes;
// "" otherwise (no such promise, a call that fails, bits that change in place
// too, or none that moves).
std::string diagnose_moved_buffers(Implementation& impl, const Problem& failing);

}  // namespace attncheck
