// What a case file may ask for, checked before anything is allocated: a
// damaged or hostile file is refused, never allowed to exhaust memory.
#pragma once

#include <cstdint>

#include "casefile/untrusted_json.h"

namespace attncheck {

// The JSON text itself: the limit of every JSON input (untrusted_json.h).
inline constexpr int64_t kMaxCaseFileBytes = kMaxJsonInputBytes;  // 256 MiB
// Any one tensor the call involves: q, k, v, out, and the batch*heads*q_len*kv_len
// logits every implementation forms (the mask has that shape). 2^26 doubles
// are 512 MiB; a real counterexample is shrunk to a few hundred elements.
inline constexpr int64_t kMaxCaseElements = int64_t{1} << 26;

}  // namespace attncheck
