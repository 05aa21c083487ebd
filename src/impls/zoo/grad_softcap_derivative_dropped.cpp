// Zoo (backward): reference's forward, and reference's backward with one fault:
// the soft-cap's derivative 1 - tanh^2(s / softcap) left out of dS (right without
// a soft-cap).
#include "impls/kernels.h"
#include "impls/reference_backward.h"

namespace attncheck {

int grad_softcap_derivative_dropped_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t err_len) {
  return detail::reference_backward_with(call, grad, err, err_len, {.softcap_derivative_dropped = true});
}

}  // namespace attncheck
