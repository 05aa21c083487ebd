// Zoo (backward, ABI v3 promise DETERMINISTIC_BACKWARD): reference's forward,
// and reference's backward whose dk sum over the query rows runs last to
// first when dk's buffer is aligned to 128 bytes (a vectorised path) and first
// to last otherwise. Each order is fixed, so the same call at the same place
// repeats every bit (grad_deterministic passes) and dk lies within rounding
// of the correct gradient; moved elsewhere, dk's last bits change. It
// promises a deterministic backward all the same:
// backward_rerun_bit_identical catches it.
#include <cstdint>

#include "impls/reference_backward.h"
#include "impls/zoo/promise_members.h"

namespace attncheck {

int grad_dk_order_by_alignment_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err,
                                           size_t err_len) {
  const bool aligned = (reinterpret_cast<uintptr_t>(grad->dk.data) & 127) == 0;
  return detail::reference_backward_with(call, grad, err, err_len, {.dk_rows_reversed = aligned});
}

}  // namespace attncheck
