// Zoo (backward): reference's forward, and reference's backward with one fault:
// dq of a row that sees no key is NaN (0/0 of its empty normaliser) instead of 0.
#include "impls/kernels.h"
#include "impls/reference_backward.h"

namespace attncheck {

int grad_nan_empty_rows_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t err_len) {
  return detail::reference_backward_with(call, grad, err, err_len, {.nan_empty_rows = true});
}

}  // namespace attncheck
