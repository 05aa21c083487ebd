/* Correct, except that when kv_len > 4 (the dtype probes use 4) it first allocates and touches
 * $ATTNCHECK_TEST_HOG_MB (default 4096) MiB, a leak at the scale of a whole
 * machine. It must be stopped at the memory limit, as a process fault. */
#include <stdlib.h>
#include <string.h>

#include "test_attention.h"

static int hog_forward(const attncheck_call *c, char *err, size_t err_len) {
  if (c->kv_len > 4) {
    const char *mb = getenv("ATTNCHECK_TEST_HOG_MB");
    const size_t n = (size_t)(mb ? atol(mb) : 4096) << 20;
    volatile char *p = malloc(n);
    for (size_t i = 0; p && i < n; i += 4096) p[i] = 1;
  }
  return test_attention(c, err, err_len);
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "memory_hog_plugin", hog_forward};
  return &impl;
}
