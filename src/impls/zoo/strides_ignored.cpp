// Zoo (ABI v2): declares STRIDES but reads q, k and v as dense BHSD whatever
// their strides say (out is still written through its own strides): right on
// dense calls, garbage on a [batch][row][head][col] view or one with gaps.
#include "impls/kernels.h"
#include "impls/zoo/knobbed_attention_v2.h"

namespace attncheck {

int strides_ignored_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len) {
  return detail::knobbed_forward_v2(call, err, err_len, {.strides_ignored = true});
}

int strides_ignored_forward(const attncheck_call* call, char* err, size_t err_len) {
  return forward_v1_via_v2(call, err, err_len, strides_ignored_forward_v2);
}

}  // namespace attncheck
