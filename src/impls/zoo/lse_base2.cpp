// Zoo (ABI v2): the lse output is log2 of the softmax denominator instead of
// its natural log (the base-2 exponent some kernels keep internally, not converted).
#include "impls/kernels.h"
#include "impls/zoo/knobbed_attention_v2.h"

namespace attncheck {

int lse_base2_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len) {
  return detail::knobbed_forward_v2(call, err, err_len, {.lse_base2 = true});
}

int lse_base2_forward(const attncheck_call* call, char* err, size_t err_len) {
  return forward_v1_via_v2(call, err, err_len, lse_base2_forward_v2);
}

}  // namespace attncheck
