/* Correct, but first tries to resize the shared memory that attncheck hands
 * it the tensors in: it finds the memfd among its open fds and truncates it to
 * nothing (after growing it to 1 GiB). A region the child can shrink makes the
 * parent die of SIGBUS when it reads the guards; a sealed one refuses both. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "test_attention.h"

static void resize_shared_memory(void) {
  for (int fd = 0; fd < 1024; ++fd) {
    char link[64], target[256];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    const ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = 0;
    if (strncmp(target, "/memfd:", 7) != 0) continue;
    if (ftruncate(fd, (off_t)1 << 30) != 0) perror("truncate_plugin: ftruncate(1 GiB)");
    if (ftruncate(fd, 0) != 0) perror("truncate_plugin: ftruncate(0)");
  }
}

static int truncate_forward(const attncheck_call *c, char *err, size_t err_len) {
  const int rc = test_attention(c, err, err_len);
  resize_shared_memory();
  return rc;
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "truncate_plugin", truncate_forward};
  return &impl;
}
