/* Built for a (hypothetical) plugin ABI version 2: must be refused, and its
 * struct must not be read past abi_version. */
#include "attncheck/plugin.h"

static int never_called(const attncheck_call *c, char *err, size_t err_len) {
  (void)c; (void)err; (void)err_len;
  return 0;
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {2u, "wrong_abi_plugin", never_called};
  return &impl;
}
