/* Correct, except that it dereferences NULL (SIGSEGV) when kv_len > 3. */
#include <stdint.h>

#include "test_attention.h"

/* Not instrumented: under the project's sanitizer build UBSan would report
 * the null store and exit with a status instead of letting the SIGSEGV happen. */
__attribute__((no_sanitize("address", "undefined")))
static int crash_forward(const attncheck_call *c, char *err, size_t err_len) {
  if (c->kv_len > 3) {
    /* Through a volatile, so the compiler cannot turn the store into a trap
     * instruction (which would be SIGILL, not the SIGSEGV the test expects). */
    volatile uintptr_t address = 0;
    *(volatile int *)address = 1;
  }
  return test_attention(c, err, err_len);
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "crash_plugin", crash_forward};
  return &impl;
}
