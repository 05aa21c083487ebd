/* Correct, but its constructor takes $ATTNCHECK_TEST_LOAD_DELAY_MS (default 0)
 * milliseconds, as a heavy library (libtorch) does on a busy machine. */
#include <stdlib.h>
#include <time.h>

#include "test_attention.h"

__attribute__((constructor)) static void load_slowly(void) {
  const char *ms = getenv("ATTNCHECK_TEST_LOAD_DELAY_MS");
  const long delay = ms ? atol(ms) : 0;
  struct timespec t = {delay / 1000, (delay % 1000) * 1000000L};
  while (delay > 0 && nanosleep(&t, &t) != 0) {
  }
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "slow_load_plugin", test_attention};
  return &impl;
}
