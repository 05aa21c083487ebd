/* Correct, except that when value_dim is odd it also writes one element past
 * the end of out (the classic off-by-one of a loop unrolled by two). */
#include "test_attention.h"

static int oob_forward(const attncheck_call *c, char *err, size_t err_len) {
  const int rc = test_attention(c, err, err_len);
  if (rc == ATTNCHECK_OK && c->value_dim % 2 == 1) {
    const int64_t n = c->batch * c->heads * c->q_len * c->value_dim;
    if (c->dtype == ATTNCHECK_F32) ((float *)c->out)[n] = 0.0f;
    else ((double *)c->out)[n] = 0.0;
  }
  return rc;
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "oob_plugin", oob_forward};
  return &impl;
}
