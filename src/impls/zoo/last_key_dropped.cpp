// Zoo: the key loop stops one short, so key kv_len - 1 is never used; a row
// whose only visible key was that one outputs zeros.
#include "impls/kernels.h"
#include "impls/zoo/knobbed_attention.h"

namespace attncheck {

int last_key_dropped_forward(const attncheck_call* call, char* err, size_t err_len) {
  return detail::knobbed_forward(call, err, err_len, {.drop_last_key = true});
}

}  // namespace attncheck
