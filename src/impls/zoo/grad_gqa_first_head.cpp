// Zoo (backward): reference's forward, and reference's backward with one fault:
// a kv head's dK and dV taken from the first query head of its group only, not
// summed over the group (right without grouping).
#include "impls/kernels.h"
#include "impls/reference_backward.h"

namespace attncheck {

int grad_gqa_first_head_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t err_len) {
  return detail::reference_backward_with(call, grad, err, err_len, {.gqa_first_head = true});
}

}  // namespace attncheck
