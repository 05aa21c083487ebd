// Zoo: the founding layer (founding-case.md). Logits are q . k with no scale at
// all, whatever call->scale says; the softmax itself is correct. For large
// head_dim the logits spread by ~sqrt(head_dim), the softmax saturates and the
// output stops following the query.
#include "impls/kernels.h"
#include "impls/zoo/knobbed_attention.h"

namespace attncheck {

int seed_unscaled_forward(const attncheck_call* call, char* err, size_t err_len) {
  return detail::knobbed_forward(call, err, err_len, {.scale_rule = detail::ScaleRule::one});
}

}  // namespace attncheck
