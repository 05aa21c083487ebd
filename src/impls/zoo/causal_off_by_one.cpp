// Zoo: the causal boundary is one key late: each query also sees the next key
// (j <= i + 1 top-left, j <= i + kv_len - q_len + 1 bottom-right; the mask still
// applies). Without a causal rule it is correct.
#include "impls/kernels.h"
#include "impls/zoo/knobbed_attention.h"

namespace attncheck {

int causal_off_by_one_forward(const attncheck_call* call, char* err, size_t err_len) {
  return detail::knobbed_forward(call, err, err_len, {.extra_causal_keys = 1});
}

}  // namespace attncheck
