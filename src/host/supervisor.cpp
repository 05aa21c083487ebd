// Runs in the forked supervisor: plain system calls, fixed buffers, ends with
// _exit (the parent's stack is never unwound here). See supervisor.h.
#include "host/supervisor.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/host_child.h"
#include "host/host_protocol.h"
#include "host/process_tree.h"

namespace attncheck::host {

namespace {

// How often the host's resident memory is looked at while a limit is set,
// and how often its end is looked for when the kernel has no pidfd.
constexpr int kTickMs = 10;
// Killing a tree of SIGKILLed processes takes milliseconds; past this the
// supervisor reports anyway rather than keep the parent waiting.
constexpr int kEndTreeGiveUpMs = 5000;

// Closes every fd but 0-2 and `keep` (any count of them).
void close_all_but(std::initializer_list<int> keep) {
  const long open_max = sysconf(_SC_OPEN_MAX);
  const int cap = open_max > 0 && open_max < 65536 ? static_cast<int>(open_max) : 65536;
  int lo = 3;
  for (;;) {
    int next = cap;  // the smallest kept fd at or above lo
    for (int k : keep)
      if (k >= lo && k < next) next = k;
    if (next > lo && close_range(static_cast<unsigned>(lo), static_cast<unsigned>(next - 1), 0) != 0)
      for (int fd = lo; fd < next; ++fd) close(fd);
    if (next >= cap) return;
    lo = next + 1;
  }
}

// The memory the plugin added: the host's resident memory beyond what it had
// when it was forked (`baseline`: the host starts as a copy of attncheck, whose
// pages are not the plugin's), and what every other process below the
// supervisor maps alone (a process the plugin forked shares the host's pages
// until one of them writes). A 0 for a process that is gone.
uint64_t added_bytes(pid_t host, uint64_t baseline, bool whole_tree) {
  const uint64_t rss = resident_bytes(host);
  uint64_t added = rss > baseline ? rss - baseline : 0;
  if (whole_tree)
    for (pid_t pid : descendants_of(getpid()))
      if (pid != host) added += private_bytes(pid);
  return added;
}

[[noreturn]] void report_and_exit(int lifeline, const SupervisorReport& r) {
  end_every_descendant(kEndTreeGiveUpMs);
  send(lifeline, &r, sizeof r, MSG_NOSIGNAL);
  _exit(0);
}

}  // namespace

void run_supervisor(const SupervisorSettings& s) {
  // Its own process group: a Ctrl-C for attncheck's group must not end the
  // supervisor before it has ended the plugin's processes (the closed
  // lifeline does that). Terminal signals are ignored for the same reason.
  setpgid(0, 0);
  for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE}) signal(sig, SIG_IGN);
  signal(SIGCHLD, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  close_all_but({s.call_sock, s.lifeline, s.region_fd});
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  // No core files: a crashing plugin is a verdict, not a file the size of the
  // host left in the user's folder. The hard limit too, so the plugin cannot
  // raise it again (only a plugin run as root could).
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);

  // What the host has before the plugin is loaded: it is forked from here, a
  // copy of attncheck, so its resident pages start as the supervisor's.
  const uint64_t baseline = resident_bytes(getpid());
  const pid_t host = fork();
  if (host < 0) _exit(127);
  if (host == 0) {
    close(s.lifeline);
    for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE}) signal(sig, SIG_DFL);
    run_host_child(s.dlopen_path, s.call_sock, s.region_fd);  // never returns
  }
  close(s.call_sock);
  close(s.region_fd);

  // A pidfd makes the host's end wake the poll; without one (Linux < 5.3) a tick looks for it.
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, host, 0));
  const int timeout = s.memory_limit_bytes || pidfd < 0 ? kTickMs : -1;
  SupervisorReport report;
  // The host alone is looked at every tick; the processes the plugin started
  // (a scan of /proc) every kTreeEvery ticks.
  constexpr int kTreeEvery = 10;
  int tick = 0;
  for (;;) {
    pollfd p[2] = {{s.lifeline, POLLIN, 0}, {pidfd, POLLIN, 0}};
    const int r = poll(p, pidfd >= 0 ? 2 : 1, timeout);
    if (r < 0 && errno != EINTR) break;
    if (p[0].revents) break;  // attncheck closed the lifeline, or died: end everything
    // The host, or orphans reparented here that ended (no zombies left about).
    int status = 0;
    for (pid_t w; (w = waitpid(-1, &status, WNOHANG)) > 0;) {
      if (w != host) continue;
      report.event = SupervisorEvent::host_ended;
      report.wait_status = status;
      report_and_exit(s.lifeline, report);
    }
    if (s.memory_limit_bytes) {
      const uint64_t rss = added_bytes(host, baseline, ++tick % kTreeEvery == 0);
      if (rss > s.memory_limit_bytes) {
        kill(host, SIGKILL);
        report.event = SupervisorEvent::memory_exceeded;
        report.resident_bytes = rss;
        report.limit_bytes = s.memory_limit_bytes;
        report_and_exit(s.lifeline, report);
      }
    }
  }
  kill(host, SIGKILL);
  end_every_descendant(kEndTreeGiveUpMs);
  _exit(0);
}

}  // namespace attncheck::host
