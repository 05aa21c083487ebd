// Zoo: K and V exchange roles: logits come from q . v_j and outputs mix k rows.
// Only defined when the two have the same width, so otherwise unsupported.
#include "impls/kernels.h"
#include "impls/zoo/knobbed_attention.h"

namespace attncheck {

int kv_swapped_forward(const attncheck_call* call, char* err, size_t err_len) {
  if (call && call->head_dim != call->value_dim)
    return report(err, err_len, ATTNCHECK_UNSUPPORTED, "kv_swapped needs head_dim == value_dim (got %lld and %lld)",
                  static_cast<long long>(call->head_dim), static_cast<long long>(call->value_dim));
  return detail::knobbed_forward(call, err, err_len, {.swap_kv = true});
}

}  // namespace attncheck
