// Zoo (ABI v2): the soft-cap tanh is applied after the bias and ALiBi are
// added, instead of to the scaled score alone, so the bias is squashed too.
#include "impls/kernels.h"
#include "impls/zoo/knobbed_attention_v2.h"

namespace attncheck {

int softcap_after_bias_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len) {
  return detail::knobbed_forward_v2(call, err, err_len, {.softcap_after_bias = true});
}

int softcap_after_bias_forward(const attncheck_call* call, char* err, size_t err_len) {
  return forward_v1_via_v2(call, err, err_len, softcap_after_bias_forward_v2);
}

}  // namespace attncheck
