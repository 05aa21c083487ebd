// Zoo (backward): reference's forward, and reference's backward with one fault:
// dV = P'^T dO with P' = exp(z - rowmax), the weights never divided by the row's
// sum (right only where that sum is 1: one visible key, no sink).
#include "impls/kernels.h"
#include "impls/reference_backward.h"

namespace attncheck {

int grad_dv_unnormalised_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t err_len) {
  return detail::reference_backward_with(call, grad, err, err_len, {.dv_unnormalised = true});
}

}  // namespace attncheck
