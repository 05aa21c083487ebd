// Zoo (ABI v2): ALiBi adds + slope * |d_i - j| instead of subtracting it, so far
// keys are favoured rather than penalised.
#include "impls/kernels.h"
#include "impls/zoo/knobbed_attention_v2.h"

namespace attncheck {

int alibi_sign_flipped_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len) {
  return detail::knobbed_forward_v2(call, err, err_len, {.alibi_sign = true});
}

int alibi_sign_flipped_forward(const attncheck_call* call, char* err, size_t err_len) {
  return forward_v1_via_v2(call, err, err_len, alibi_sign_flipped_forward_v2);
}

}  // namespace attncheck
