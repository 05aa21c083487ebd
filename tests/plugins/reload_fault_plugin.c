/* Loads once, then cannot be loaded again: correct, except that it dies of
 * SIGSEGV when kv_len > 4 (the dtype probes use 4), and its constructor faults on every load after the
 * first, so the host cannot be restarted after that crash. The loads are
 * counted with a marker file, $ATTNCHECK_TEST_RELOAD_MARKER (no marker: it
 * never faults on load); $ATTNCHECK_TEST_RELOAD_FAULT says how a second load
 * faults: "crash" (SIGSEGV, the default) or "hang" (never returns). */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_attention.h"

__attribute__((constructor, no_sanitize("address", "undefined"))) static void fault_on_reload(void) {
  const char *marker = getenv("ATTNCHECK_TEST_RELOAD_MARKER");
  if (!marker || !*marker) return;
  const int fd = open(marker, O_CREAT | O_EXCL | O_WRONLY, 0600);
  if (fd >= 0) {  /* the first load */
    close(fd);
    return;
  }
  const char *how = getenv("ATTNCHECK_TEST_RELOAD_FAULT");
  if (how && strcmp(how, "hang") == 0)
    for (;;) pause();
  volatile uintptr_t address = 0;
  *(volatile int *)address = 1;
}

__attribute__((no_sanitize("address", "undefined")))
static int reload_fault_forward(const attncheck_call *c, char *err, size_t err_len) {
  if (c->kv_len > 4) {
    volatile uintptr_t address = 0;
    *(volatile int *)address = 1;
  }
  return test_attention(c, err, err_len);
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "reload_fault_plugin", reload_fault_forward};
  return &impl;
}
