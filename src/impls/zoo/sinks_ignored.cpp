// Zoo (ABI v2): declares SINKS but leaves exp(sink) out of the softmax
// denominator (and the lse): the weights sum to 1 as if there were no sink.
#include "impls/kernels.h"
#include "impls/zoo/knobbed_attention_v2.h"

namespace attncheck {

int sinks_ignored_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len) {
  return detail::knobbed_forward_v2(call, err, err_len, {.sinks_ignored = true});
}

int sinks_ignored_forward(const attncheck_call* call, char* err, size_t err_len) {
  return forward_v1_via_v2(call, err, err_len, sinks_ignored_forward_v2);
}

}  // namespace attncheck
