// The causal rule, defined once for everything that needs it: the Problem
// (problem.h), the built-in kernels (impls/typed_call.h), the laws and the
// fault models. It depends on the ABI header alone so C-level kernels can use it.
//
//   top_left:     query i may see key j iff j <= i
//   bottom_right: query i may see key j iff j <= i + kv_len - q_len
//   none:         every key
#pragma once

#include <cstdint>

#include "attncheck/plugin.h"

namespace attncheck {

// Number of leading keys [0, end) the causal rule leaves to query row i; the
// result may be <= 0 (the row sees nothing) or >= kv_len (it sees every key).
// `causal` is the ABI's raw value; an unknown value is treated as none (the
// built-ins refuse such calls before they get here).
constexpr int64_t causal_key_end(int causal, int64_t q_len, int64_t kv_len, int64_t i) {
  switch (causal) {
    case ATTNCHECK_CAUSAL_TOP_LEFT: return i + 1;
    case ATTNCHECK_CAUSAL_BOTTOM_RIGHT: return i + kv_len - q_len + 1;
    default: return kv_len;
  }
}

}  // namespace attncheck
