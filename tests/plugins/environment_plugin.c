/* Loads only when its process has ATTNCHECK_TEST_GREETING set (PluginOptions::
 * environment, as check --python passes its target), taking that value as its
 * name; otherwise attncheck_plugin_v1 returns NULL and attncheck_plugin_load_error
 * says why. Its forward writes zeros (never judged: the tests look at loading). */
#include <stdlib.h>
#include <string.h>

#include "attncheck/plugin.h"

static int zeros(const attncheck_call *c, char *err, size_t err_len) {
  (void)err;
  (void)err_len;
  size_t bytes = c->dtype == ATTNCHECK_F64 ? 8 : c->dtype == ATTNCHECK_F32 ? 4 : 2;
  memset(c->out, 0, (size_t)(c->batch * c->heads * c->q_len * c->value_dim) * bytes);
  return ATTNCHECK_OK;
}

static attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "", zeros};

const attncheck_impl *attncheck_plugin_v1(void) {
  const char *greeting = getenv("ATTNCHECK_TEST_GREETING");
  if (!greeting) return NULL;
  impl.name = greeting;
  return &impl;
}

const char *attncheck_plugin_load_error(void) { return "ATTNCHECK_TEST_GREETING is not set"; }
