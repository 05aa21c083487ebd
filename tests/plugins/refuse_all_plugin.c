/* Answers ATTNCHECK_UNSUPPORTED to every call. `check` refuses it (nothing can
 * be checked); `replay` of any case file against it judges nothing, which must
 * not be a pass (issue #30). */
#include <stdio.h>

#include "attncheck/plugin.h"

static int refuse_forward(const attncheck_call *c, char *err, size_t err_len) {
  (void)c;
  snprintf(err, err_len, "refuse_all answers no call");
  return ATTNCHECK_UNSUPPORTED;
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "refuse_all", refuse_forward};
  return &impl;
}
