// Zoo (ABI v2): ignores kv_lens in the key loop, so keys j >= kv_lens[b]
// (padding, which may hold anything) are attended like real ones. The diagonal
// of the causal rule, window and ALiBi still uses the true length.
#include "impls/kernels.h"
#include "impls/zoo/knobbed_attention_v2.h"

namespace attncheck {

int padding_keys_attended_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len) {
  return detail::knobbed_forward_v2(call, err, err_len, {.padding_keys_attended = true});
}

int padding_keys_attended_forward(const attncheck_call* call, char* err, size_t err_len) {
  return forward_v1_via_v2(call, err, err_len, padding_keys_attended_forward_v2);
}

}  // namespace attncheck
