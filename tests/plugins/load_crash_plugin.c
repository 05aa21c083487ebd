/* Crashes in its constructor, that is inside dlopen: the parent must survive
 * and refuse it with the signal's name. */
#include <stdint.h>

#include "attncheck/plugin.h"

/* Not instrumented, so a sanitizer build still dies of the SIGSEGV itself. */
__attribute__((constructor, no_sanitize("address", "undefined"))) static void crash_on_load(void) {
  volatile uintptr_t address = 0;
  *(volatile int *)address = 1;
}

static int unreachable_forward(const attncheck_call *c, char *err, size_t err_len) {
  (void)c; (void)err; (void)err_len;
  return 0;
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "load_crash_plugin", unreachable_forward};
  return &impl;
}
