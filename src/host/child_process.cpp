#include "host/child_process.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "host/host_protocol.h"
#include "host/orphans.h"
#include "host/process_tree.h"
#include "host/signal_names.h"
#include "host/supervisor.h"

namespace attncheck {

namespace {

using Clock = std::chrono::steady_clock;

// The supervisor ends a tree of SIGKILLed processes in milliseconds; a
// supervisor that takes longer than this is killed itself.
constexpr int kReapPatienceMs = 5000;

std::string mib(uint64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

std::string describe(const host::SupervisorReport& r) {
  if (r.event == host::SupervisorEvent::memory_exceeded)
    return "exceeded the memory limit of " + mib(r.limit_bytes) + " (its processes added " + mib(r.resident_bytes) +
           ") and was stopped; raise it with --memory-limit";
  if (WIFEXITED(r.wait_status) && WEXITSTATUS(r.wait_status) == host::kExitLostConnection)
    return "lost its connection to attncheck: the plugin closed a file descriptor it does not own (the host's "
           "socket), so its process had to end";
  return wait_status_description(r.wait_status);
}

int poll_one(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  for (;;) {
    const int r = poll(&p, 1, timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    return r;
  }
}

}  // namespace

bool ChildProcess::start(const std::string& dlopen_path, int region_fd, uint64_t memory_limit_bytes,
                         std::string& why) {
  kill_and_reap();
  int call[2], life[2];
  // SOCK_SEQPACKET keeps message boundaries; CLOEXEC keeps the parent's ends
  // out of anything the parent may exec later.
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, call) != 0) {
    why = std::string("socketpair failed: ") + std::strerror(errno);
    return false;
  }
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, life) != 0) {
    why = std::string("socketpair failed: ") + std::strerror(errno);
    close(call[0]);
    close(call[1]);
    return false;
  }
  // Unflushed stdio data would otherwise be duplicated by the child's buffers.
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    why = std::string("fork failed: ") + std::strerror(errno);
    for (int fd : {call[0], call[1], life[0], life[1]}) close(fd);
    return false;
  }
  if (pid == 0) {
    // The supervisor's environment is the host child's: set before it forks it.
    for (const auto& [name, value] : environment_) setenv(name.c_str(), value.c_str(), 1);
    host::SupervisorSettings s;
    s.dlopen_path = dlopen_path.c_str();
    s.call_sock = call[1];
    s.lifeline = life[1];
    s.region_fd = region_fd;
    s.memory_limit_bytes = memory_limit_bytes;
    host::run_supervisor(s);  // never returns
  }
  close(call[1]);  // so the host's end is the only one: its death is a hangup on call[0]
  close(life[1]);
  setpgid(pid, pid);  // also done by the supervisor: whichever runs first, no race
  note_supervisor(pid);
  pid_ = pid;
  host_pid_ = -1;
  sock_ = call[0];
  life_ = life[0];
  return true;
}

ChildProcess::Wait ChildProcess::send(const void* msg, std::size_t n, int fd) {
  if (pid_ <= 0) return Wait::io_error;
  iovec io{const_cast<void*>(msg), n};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  if (fd >= 0) {
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  for (;;) {
    const ssize_t r = sendmsg(sock_, &m, MSG_NOSIGNAL);
    if (r == static_cast<ssize_t>(n)) return Wait::ok;
    if (r < 0 && errno == EINTR) continue;
    return r < 0 && (errno == EPIPE || errno == ECONNRESET) ? Wait::died : Wait::io_error;
  }
}

std::string ChildProcess::Spent::text() const {
  return std::to_string(std::lround(cpu_ms)) + " ms of CPU time in " + std::to_string(std::lround(wall_ms)) + " ms";
}

namespace {

// How often a wait looks at the CPU time the plugin spent: a twentieth of
// the limit (a timeout overshoots it by at most that), within 10 to 100 ms.
int sample_every_ms(int cpu_ms) { return std::clamp(cpu_ms / 20, 10, 100); }

}  // namespace

ChildProcess::Wait ChildProcess::receive(void* msg, std::size_t n, const Limits& limits, Counting counting,
                                         std::string& how_it_ended, Spent& spent) {
  if (pid_ <= 0) return Wait::io_error;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::milliseconds(limits.wall_ms);
  // CPU time is read from /proc only once a wait has lasted one sampling
  // period (most calls answer in far less): the host's own time is read now
  // (one small file), the rest of the tree from the first sample on.
  host::ProcessCpu host_at_start;
  const bool host_known = counting == Counting::call && host_pid_ > 0 && host::read_process_cpu(host_pid_, host_at_start);
  bool sampled = false;
  double tree_at_first = 0, before_first = 0;
  auto cpu_spent = [&] {
    const double tree = host::tree_cpu_ms(pid_);
    if (!sampled) {
      sampled = true;
      tree_at_first = tree;
      host::ProcessCpu host_now;
      // A start counts the whole tree from its fork; a call, the host's time
      // from the call's start (plus, from here on, everything's).
      before_first = !host_known                                   ? tree
                     : host::read_process_cpu(host_pid_, host_now) ? host_now.total_ms() - host_at_start.total_ms()
                                                                   : 0;
    }
    return tree - tree_at_first + before_first;
  };
  const int every = sample_every_ms(limits.cpu_ms);
  auto finish = [&](Wait w, bool by_wall) {
    spent.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    spent.by_wall = by_wall;
    return w;
  };
  for (;;) {
    // Rounded up: a truncated wait would wake just before the deadline, give
    // up early, and cut a slow call short of its limit.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      spent.cpu_ms = cpu_spent();
      return finish(Wait::timed_out, true);
    }
    // The lifeline speaks when the host ended even if a process it started
    // still holds the call socket open (so the socket never hangs up).
    pollfd p[2] = {{sock_, POLLIN, 0}, {life_, POLLIN, 0}};
    const int r = poll(p, 2, static_cast<int>(std::min<long long>(left, every)));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return finish(Wait::io_error, false);
    if (r == 0) {
      spent.cpu_ms = cpu_spent();
      if (spent.cpu_ms < limits.cpu_ms) continue;
      // Over the limit: read again after a moment, so a process reaped while
      // the tree was being read (counted twice in that reading) cannot end
      // the call; the answer may also come in the meantime.
      if (poll(p, 2, 10) == 0 && (spent.cpu_ms = cpu_spent()) >= limits.cpu_ms) return finish(Wait::timed_out, false);
      continue;
    }
    if (p[0].revents) {
      const ssize_t got = recv(sock_, msg, n, MSG_DONTWAIT);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got == static_cast<ssize_t>(n)) return finish(Wait::ok, false);
      if (got > 0) return finish(Wait::io_error, false);  // a message of the wrong size: the protocol is broken
      // The socket closed: the host ended (its report follows at once), or
      // it closed the socket and lives on (no report: it is ended here).
      how_it_ended = collect_end(2000);
      return finish(Wait::died, false);
    }
    how_it_ended = collect_end(kReapPatienceMs);
    return finish(Wait::died, false);
  }
}

std::string ChildProcess::collect_end(int wait_ms) {
  host::SupervisorReport report;
  bool reported = false;
  if (poll_one(life_, wait_ms) > 0)
    reported = recv(life_, &report, sizeof report, MSG_DONTWAIT) == static_cast<ssize_t>(sizeof report);
  kill_and_reap();
  return reported ? describe(report) : "closed its connection to attncheck without exiting";
}

void ChildProcess::kill_and_reap() {
  if (sock_ >= 0) {
    close(sock_);
    sock_ = -1;
  }
  if (life_ >= 0) {
    close(life_);  // the supervisor's cue: end the host and everything it started
    life_ = -1;
  }
  if (pid_ > 0) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(kReapPatienceMs);
    for (;;) {
      const pid_t r = waitpid(pid_, nullptr, WNOHANG);
      if (r == pid_ || (r < 0 && errno != EINTR)) break;
      if (Clock::now() > deadline) {
        kill(pid_, SIGKILL);  // the host follows it (PR_SET_PDEATHSIG)
        while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
        }
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    forget_supervisor(pid_);
    pid_ = -1;
    host_pid_ = -1;
    // A plugin that killed its supervisor left its processes to this one, when it adopts them.
    end_adopted_orphans();
  }
}

}  // namespace attncheck
