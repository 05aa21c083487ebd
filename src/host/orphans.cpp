#include "host/orphans.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "host/process_tree.h"

namespace attncheck {

namespace {

bool g_adopt = false;     // adopt_orphans() was called (in this process or one it was forked from)
pid_t g_adopter = -1;     // the process whose subreaper flag is set
std::vector<pid_t> g_supervisors;

// The flag does not survive fork: a worker renews it for itself.
void renew() {
  if (!g_adopt || g_adopter == getpid()) return;
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  g_adopter = getpid();
  g_supervisors.clear();  // the parent's supervisors are not this process's children
}

}  // namespace

void adopt_orphans() {
  g_adopt = true;
  renew();
}

void note_supervisor(pid_t pid) {
  renew();
  g_supervisors.push_back(pid);
}

void forget_supervisor(pid_t pid) {
  g_supervisors.erase(std::remove(g_supervisors.begin(), g_supervisors.end(), pid), g_supervisors.end());
}

void end_adopted_orphans() {
  if (!g_adopt || g_adopter != getpid()) return;
  const pid_t own_group = getpgrp();
  // Killing one may reparent its children here: a few rounds until none is left.
  for (int round = 0; round < 100; ++round) {
    std::vector<pid_t> orphans;
    for (pid_t pid : host::own_children()) {
      if (std::find(g_supervisors.begin(), g_supervisors.end(), pid) != g_supervisors.end()) continue;
      const pid_t group = getpgid(pid);
      if (group < 0 || group == own_group) continue;
      orphans.push_back(pid);
    }
    if (orphans.empty()) return;
    for (pid_t pid : orphans) kill(pid, SIGKILL);
    for (pid_t pid : orphans)
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
  }
}

}  // namespace attncheck
