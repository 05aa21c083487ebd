// Zoo (backward): reference's forward, and reference's backward with one fault:
// dS = P * dP: the rowsum term D_i = rowsum(dO_i * O_i) left out of dS = P * (dP - D),
// so dq and dk are wrong wherever D_i != 0 (dv, which does not use dS, is right).
#include "impls/kernels.h"
#include "impls/reference_backward.h"

namespace attncheck {

int grad_no_rowsum_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t err_len) {
  return detail::reference_backward_with(call, grad, err, err_len, {.no_rowsum = true});
}

}  // namespace attncheck
