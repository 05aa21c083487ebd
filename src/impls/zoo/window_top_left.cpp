// Zoo (ABI v2): the sliding window and ALiBi distances align to d_i = i for
// every causal rule, instead of d_i = i + Lk - Lq under BOTTOM_RIGHT and NONE
// (the causal rule itself keeps its correct diagonal). Same when Lq == Lk.
#include "impls/kernels.h"
#include "impls/zoo/knobbed_attention_v2.h"

namespace attncheck {

int window_top_left_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len) {
  return detail::knobbed_forward_v2(call, err, err_len, {.window_top_left = true});
}

int window_top_left_forward(const attncheck_call* call, char* err, size_t err_len) {
  return forward_v1_via_v2(call, err, err_len, window_top_left_forward_v2);
}

}  // namespace attncheck
