// Zoo (ABI v2): window_left = W admits the W keys d_i - W + 1 .. d_i instead of
// the W + 1 keys d_i - W .. d_i (reading W as a window size, not a reach).
#include "impls/kernels.h"
#include "impls/zoo/knobbed_attention_v2.h"

namespace attncheck {

int window_off_by_one_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len) {
  return detail::knobbed_forward_v2(call, err, err_len, {.window_off_by_one = true});
}

int window_off_by_one_forward(const attncheck_call* call, char* err, size_t err_len) {
  return forward_v1_via_v2(call, err, err_len, window_off_by_one_forward_v2);
}

}  // namespace attncheck
