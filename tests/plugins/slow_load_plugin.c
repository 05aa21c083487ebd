/* Correct, but slow: its constructor takes $ATTNCHECK_TEST_LOAD_DELAY_MS
 * (default 0) milliseconds, as a heavy library (libtorch) does on a busy
 * machine, and each call takes $ATTNCHECK_TEST_CALL_DELAY_MS (default 0). */
#include <stdlib.h>
#include <time.h>

#include "test_attention.h"

static void sleep_ms(const char *variable) {
  const char *ms = getenv(variable);
  const long delay = ms ? atol(ms) : 0;
  struct timespec t = {delay / 1000, (delay % 1000) * 1000000L};
  while (delay > 0 && nanosleep(&t, &t) != 0) {
  }
}

__attribute__((constructor)) static void load_slowly(void) { sleep_ms("ATTNCHECK_TEST_LOAD_DELAY_MS"); }

static int slow_forward(const attncheck_call *c, char *err, size_t err_len) {
  sleep_ms("ATTNCHECK_TEST_CALL_DELAY_MS");
  return test_attention(c, err, err_len);
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "slow_load_plugin", slow_forward};
  return &impl;
}
