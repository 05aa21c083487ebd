/* Correct, except that it never returns when q_len > 2. */
#include "test_attention.h"

static int hang_forward(const attncheck_call *c, char *err, size_t err_len) {
  volatile int forever = 1;  /* volatile: the loop cannot be optimised away */
  while (c->q_len > 2 && forever) {
  }
  return test_attention(c, err, err_len);
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "hang_plugin", hang_forward};
  return &impl;
}
