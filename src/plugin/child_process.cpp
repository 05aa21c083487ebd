#include "plugin/child_process.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "plugin/host_child.h"
#include "plugin/signal_names.h"

namespace attncheck {

bool ChildProcess::start(const std::string& dlopen_path, int region_fd, std::string& why) {
  kill_and_reap();
  int pair[2];
  // SOCK_SEQPACKET keeps message boundaries; CLOEXEC keeps the parent's end
  // out of anything the parent may exec later.
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    why = std::string("socketpair failed: ") + std::strerror(errno);
    return false;
  }
  // Unflushed stdio data would otherwise be duplicated by the child's buffers.
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    why = std::string("fork failed: ") + std::strerror(errno);
    close(pair[0]);
    close(pair[1]);
    return false;
  }
  if (pid == 0) {
    close(pair[0]);
    host::run_host_child(dlopen_path.c_str(), pair[1], region_fd);  // never returns
  }
  close(pair[1]);  // so the child's death is a hangup on pair[0]
  setpgid(pid, pid);  // also done by the child: whichever runs first, no race
  pid_ = pid;
  sock_ = pair[0];
  return true;
}

ChildProcess::Wait ChildProcess::send(const void* msg, std::size_t n) {
  if (pid_ <= 0) return Wait::io_error;
  for (;;) {
    const ssize_t r = ::send(sock_, msg, n, MSG_NOSIGNAL);
    if (r == static_cast<ssize_t>(n)) return Wait::ok;
    if (r < 0 && errno == EINTR) continue;
    return r < 0 && (errno == EPIPE || errno == ECONNRESET) ? Wait::died : Wait::io_error;
  }
}

ChildProcess::Wait ChildProcess::receive(void* msg, std::size_t n, int timeout_ms, std::string& how_it_ended) {
  if (pid_ <= 0) return Wait::io_error;
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    // Rounded up: a truncated wait would wake just before the deadline, give
    // up early, and cut a slow call short of its limit.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0) return Wait::timed_out;
    pollfd p{sock_, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Wait::io_error;
    if (r == 0) return Wait::timed_out;
    const ssize_t got = recv(sock_, msg, n, MSG_DONTWAIT);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got == static_cast<ssize_t>(n)) return Wait::ok;
    if (got == 0 || (got < 0 && errno == ECONNRESET)) {
      how_it_ended = reap_after_hangup();
      return Wait::died;
    }
    return Wait::io_error;  // a message of the wrong size: the protocol is broken
  }
}

std::string ChildProcess::reap_after_hangup() {
  // The socket closes when the process exits, but a plugin could also close
  // it and go on running: wait a little, then make sure.
  int status = 0;
  for (int i = 0; i < 200; ++i) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      kill_and_reap();
      return wait_status_description(status);
    }
    if (r < 0 && errno != EINTR) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  kill_and_reap();
  return "closed its connection to attncheck without exiting";
}

void ChildProcess::kill_and_reap() {
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);  // the group: anything the plugin forked goes too
    kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  if (sock_ >= 0) {
    close(sock_);
    sock_ = -1;
  }
}

}  // namespace attncheck
