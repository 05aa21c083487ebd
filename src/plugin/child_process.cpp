#include "plugin/child_process.h"

#include <cerrno>
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

#include "plugin/host_protocol.h"
#include "plugin/signal_names.h"
#include "plugin/supervisor.h"

namespace attncheck {

namespace {

using Clock = std::chrono::steady_clock;

// The supervisor ends a tree of SIGKILLed processes in milliseconds; a
// supervisor that takes longer than this is killed itself.
constexpr int kReapPatienceMs = 5000;

std::string mib(uint64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

std::string describe(const host::SupervisorReport& r) {
  if (r.event == host::SupervisorEvent::memory_exceeded)
    return "exceeded the memory limit of " + mib(r.limit_bytes) + " (resident " + mib(r.resident_bytes) +
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
  pid_ = pid;
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

ChildProcess::Wait ChildProcess::receive(void* msg, std::size_t n, int timeout_ms, std::string& how_it_ended) {
  if (pid_ <= 0) return Wait::io_error;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    // Rounded up: a truncated wait would wake just before the deadline, give
    // up early, and cut a slow call short of its limit.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return Wait::timed_out;
    // The lifeline speaks when the host ended even if a process it started
    // still holds the call socket open (so the socket never hangs up).
    pollfd p[2] = {{sock_, POLLIN, 0}, {life_, POLLIN, 0}};
    const int r = poll(p, 2, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Wait::io_error;
    if (r == 0) return Wait::timed_out;
    if (p[0].revents) {
      const ssize_t got = recv(sock_, msg, n, MSG_DONTWAIT);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got == static_cast<ssize_t>(n)) return Wait::ok;
      if (got > 0) return Wait::io_error;  // a message of the wrong size: the protocol is broken
      // The socket closed: the host ended (its report follows at once), or
      // it closed the socket and lives on (no report: it is ended here).
      how_it_ended = collect_end(2000);
      return Wait::died;
    }
    how_it_ended = collect_end(kReapPatienceMs);
    return Wait::died;
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
    pid_ = -1;
  }
}

}  // namespace attncheck
