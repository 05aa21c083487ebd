/* Leaves processes behind, the way a plugin that starts workers might.
 * Correct on every call, except that with $ATTNCHECK_TEST_PID_FILE set it
 * first starts two sleeping children, appends their pids to that file and:
 *   kv_len == 3  returns a correct answer (the children stay behind);
 *   kv_len == 4  lets both children close every fd, one of them also leaves
 *                the process group with setsid(), then dies of SIGSEGV;
 *   kv_len >= 5  keeps the fds open in the children (so they hold the
 *                socket to attncheck), then abort()s.
 * Every process a plugin starts must be gone when its host ends. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_attention.h"

static void record_pid(const char *file, pid_t pid) {
  FILE *f = fopen(file, "a");
  if (!f) return;
  fprintf(f, "%d\n", (int)pid);
  fclose(f);
}

/* A child that sleeps forever; with close_all it closes every fd first, and
 * with detach it leaves the host's process group and session. */
static void start_sleeper(const char *file, int close_all, int detach) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (detach) setsid();
    if (close_all) for (int fd = 0; fd < 4096; ++fd) close(fd);
    for (;;) pause();
  }
  if (pid > 0) record_pid(file, pid);
}

__attribute__((no_sanitize("address", "undefined")))
static int orphan_forward(const attncheck_call *c, char *err, size_t err_len) {
  const char *file = getenv("ATTNCHECK_TEST_PID_FILE");
  if (file && *file && c->kv_len >= 3) {
    const int close_all = c->kv_len == 4;
    start_sleeper(file, close_all, 0);
    start_sleeper(file, close_all, 1);
    if (c->kv_len == 4) {
      volatile uintptr_t address = 0;
      *(volatile int *)address = 1;
    }
    if (c->kv_len >= 5) abort();
  }
  return test_attention(c, err, err_len);
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "orphan_plugin", orphan_forward};
  return &impl;
}
