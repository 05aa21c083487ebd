// Zoo (backward): reference's forward, and reference's backward with one fault:
// dk += onto whatever the buffer held instead of overwritten (right only when the
// buffer held zeros).
#include "impls/kernels.h"
#include "impls/reference_backward.h"

namespace attncheck {

int grad_dk_accumulated_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t err_len) {
  return detail::reference_backward_with(call, grad, err, err_len, {.dk_accumulated = true});
}

}  // namespace attncheck
