/* Correct, but its name and its error text carry terminal control sequences
 * (clear the screen, move the cursor, ring the bell): they must reach the
 * console escaped, never raw. It answers f16 and bf16 with such an err. */
#include "test_attention.h"

static int escape_forward(const attncheck_call *c, char *err, size_t err_len) {
  const int rc = test_attention(c, err, err_len);
  if (rc == ATTNCHECK_UNSUPPORTED) snprintf(err, err_len, "no\x1b[2J\x1b[H\a 16-bit\r\ttypes\xc2\x9b""31m");
  return rc;
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "escape\x1b[2J\x1b[31m_plugin\a", escape_forward};
  return &impl;
}
