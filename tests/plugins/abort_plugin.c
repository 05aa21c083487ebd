/* Aborts (SIGABRT) on every call: nothing it is asked ever completes. No law
 * can judge a case of it, so none may pass or be skipped in silence, and an
 * expected failure of no_crash must not turn it into a pass (issue #30). */
#include <stdlib.h>

#include "attncheck/plugin.h"

static int abort_forward(const attncheck_call *c, char *err, size_t err_len) {
  (void)c;
  (void)err;
  (void)err_len;
  abort();
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "abort_plugin", abort_forward};
  return &impl;
}
