#include "plugin/process_tree.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace attncheck::host {

namespace {

// The parent pid of `pid` from /proc/<pid>/stat, or -1. The command name in
// parentheses may hold spaces and ')': the fields follow its last ')'.
pid_t parent_of(const char* pid) {
  char path[64], buf[512];
  std::snprintf(path, sizeof path, "/proc/%s/stat", pid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  const char* close_paren = std::strrchr(buf, ')');
  if (!close_paren) return -1;
  char state = 0;
  int ppid = -1;
  if (std::sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2) return -1;
  return ppid;
}

}  // namespace

std::vector<pid_t> own_children() {
  std::vector<pid_t> children;
  const pid_t self = getpid();
  DIR* proc = opendir("/proc");
  if (!proc) return children;
  while (const dirent* e = readdir(proc)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    if (parent_of(e->d_name) == self) children.push_back(static_cast<pid_t>(std::atoi(e->d_name)));
  }
  closedir(proc);
  return children;
}

bool end_every_descendant(int give_up_ms) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(give_up_ms);
  for (;;) {
    // Only own children are signalled: an unreaped child keeps its pid (a
    // zombie), so the pid cannot belong to an unrelated process by now.
    const std::vector<pid_t> children = own_children();
    for (pid_t pid : children) kill(pid, SIGKILL);
    for (pid_t pid : children)
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    // Children that exited on their own, and any the scan raced with.
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (children.empty()) {
      // Nothing left to signal: done when no child at all remains (a process
      // that is being reparented here shows up in the next scan).
      if (waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD) return true;
      usleep(500);
    }
    if (Clock::now() > deadline) return false;
  }
}

}  // namespace attncheck::host
