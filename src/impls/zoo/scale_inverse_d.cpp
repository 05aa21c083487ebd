// Zoo: the default scale is 1/head_dim instead of 1/sqrt(head_dim); an explicit
// scale is honoured, so only calls that ask for the default go wrong (and not
// at all when head_dim is 1).
#include "impls/kernels.h"
#include "impls/zoo/knobbed_attention.h"

namespace attncheck {

int scale_inverse_d_forward(const attncheck_call* call, char* err, size_t err_len) {
  return detail::knobbed_forward(call, err, err_len, {.scale_rule = detail::ScaleRule::inverse_head_dim});
}

}  // namespace attncheck
