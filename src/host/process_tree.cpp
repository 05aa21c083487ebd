#include "host/process_tree.h"

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

// /proc/<pid>/stat into `out`. The command name in parentheses may hold
// spaces and ')': the fields follow its last ')'. Fields after it: state (3),
// ppid (4), ..., utime (14), stime (15), cutime (16), cstime (17), in clock ticks.
bool read_stat(const char* pid, ProcessCpu& out) {
  char path[64], buf[1024];
  std::snprintf(path, sizeof path, "/proc/%s/stat", pid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  const char* close_paren = std::strrchr(buf, ')');
  if (!close_paren) return false;
  char state = 0;
  int ppid = -1;
  unsigned long long utime = 0, stime = 0;
  long long cutime = 0, cstime = 0;
  if (std::sscanf(close_paren + 1, " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld", &state, &ppid,
                  &utime, &stime, &cutime, &cstime) != 6)
    return false;
  static const double ms_per_tick = 1000.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
  out.pid = static_cast<pid_t>(std::atoi(pid));
  out.parent = ppid;
  out.own_ms = static_cast<double>(utime + stime) * ms_per_tick;
  out.reaped_ms = static_cast<double>(cutime + cstime) * ms_per_tick;
  return true;
}

pid_t parent_of(const char* pid) {
  ProcessCpu p;
  return read_stat(pid, p) ? p.parent : -1;
}

// Every process's /proc/<pid>/stat, in one pass.
std::vector<ProcessCpu> all_processes() {
  std::vector<ProcessCpu> all;
  DIR* proc = opendir("/proc");
  if (!proc) return all;
  while (const dirent* e = readdir(proc)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    ProcessCpu p;
    if (read_stat(e->d_name, p)) all.push_back(p);
  }
  closedir(proc);
  return all;
}

// The processes of `all` below `root`, found parent by parent.
std::vector<const ProcessCpu*> below(const std::vector<ProcessCpu>& all, pid_t root) {
  std::vector<const ProcessCpu*> found;
  std::vector<pid_t> frontier{root};
  while (!frontier.empty()) {
    const pid_t parent = frontier.back();
    frontier.pop_back();
    for (const ProcessCpu& p : all)
      if (p.parent == parent && p.pid != root) {
        found.push_back(&p);
        frontier.push_back(p.pid);
      }
  }
  return found;
}

// "<key>: <n> kB" from a /proc status-like text; 0 when absent.
uint64_t kib_field(const char* text, const char* key) {
  const char* at = std::strstr(text, key);
  unsigned long long kib = 0;
  if (!at || std::sscanf(at + std::strlen(key), " %llu", &kib) != 1) return 0;
  return kib * 1024;
}

}  // namespace

bool read_process_cpu(pid_t pid, ProcessCpu& out) {
  char name[32];
  std::snprintf(name, sizeof name, "%d", static_cast<int>(pid));
  return read_stat(name, out);
}

double tree_cpu_ms(pid_t root) {
  const std::vector<ProcessCpu> all = all_processes();
  double ms = 0;
  for (const ProcessCpu& p : all)
    if (p.pid == root) ms += p.reaped_ms;
  for (const ProcessCpu* p : below(all, root)) ms += p->total_ms();
  return ms;
}

std::vector<pid_t> descendants_of(pid_t root) {
  const std::vector<ProcessCpu> all = all_processes();
  std::vector<pid_t> pids;
  for (const ProcessCpu* p : below(all, root)) pids.push_back(p->pid);
  return pids;
}

uint64_t resident_bytes(pid_t pid) {
  char path[64], buf[128];
  std::snprintf(path, sizeof path, "/proc/%d/statm", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  unsigned long long size = 0, resident = 0;
  if (std::sscanf(buf, "%llu %llu", &size, &resident) != 2) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

uint64_t private_bytes(pid_t pid) {
  char path[64], buf[4096];
  std::snprintf(path, sizeof path, "/proc/%d/smaps_rollup", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return resident_bytes(pid);
  ssize_t n = 0;
  for (ssize_t r; n < static_cast<ssize_t>(sizeof buf) - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0;) n += r;
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  return kib_field(buf, "Private_Clean:") + kib_field(buf, "Private_Dirty:");
}

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
    // No child at all, the usual end (the host was the only one and is reaped; the
    // processes it started were reparented here before it could be reaped): no scan of
    // /proc, which costs about 200 reads on a busy machine, at every restart of a plugin
    // that crashes.
    pid_t reaped;
    while ((reaped = waitpid(-1, nullptr, WNOHANG)) > 0) {
    }
    if (reaped < 0 && errno == ECHILD) return true;
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
