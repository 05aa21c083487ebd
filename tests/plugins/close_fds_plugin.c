/* Correct, but its constructor closes file descriptors it never opened:
 * 0 to $ATTNCHECK_TEST_CLOSE_FDS_UPTO (default 100), or every one of them
 * when that is "all". attncheck's connection must survive the first, and the
 * second must be named, not reported as a plain exit. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_attention.h"

__attribute__((constructor)) static void close_foreign_fds(void) {
  const char *upto = getenv("ATTNCHECK_TEST_CLOSE_FDS_UPTO");
  const long last = upto && strcmp(upto, "all") == 0 ? 1L << 20 : upto ? atol(upto) : 100;
  for (long fd = 0; fd <= last; ++fd) close((int)fd);
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "close_fds_plugin", test_attention};
  return &impl;
}
