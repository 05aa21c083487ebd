// Zoo (backward): reference's forward, and reference's backward with one fault:
// dQ = dS K without the softmax scale: dq off by 1 / scale (dk and dv right).
#include "impls/kernels.h"
#include "impls/reference_backward.h"

namespace attncheck {

int grad_dq_unscaled_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t err_len) {
  return detail::reference_backward_with(call, grad, err, err_len, {.dq_unscaled = true});
}

}  // namespace attncheck
