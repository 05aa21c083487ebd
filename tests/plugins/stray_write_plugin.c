/* Correct, except for one stray byte it writes where no guard zone used to be:
 *   kv_len == 4: 4160 bytes past the end of out (beyond the 4096-byte guard);
 *   kv_len == 5: just past the end of q, into the alignment gap before k.
 * Everything the child can write that is not out must be guarded. */
#include <stdint.h>

#include "test_attention.h"

static int stray_forward(const attncheck_call *c, char *err, size_t err_len) {
  const int rc = test_attention(c, err, err_len);
  const int64_t elem = c->dtype == ATTNCHECK_F32 ? 4 : 8;
  if (c->kv_len == 4) {
    uint8_t *end = (uint8_t *)c->out + elem * c->batch * c->heads * c->q_len * c->value_dim;
    end[4160] ^= 0x5A;
  } else if (c->kv_len == 5) {
    uint8_t *end = (uint8_t *)c->q + elem * c->batch * c->heads * c->q_len * c->head_dim;
    end[0] ^= 0x5A;
  }
  return rc;
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "stray_write_plugin", stray_forward};
  return &impl;
}
