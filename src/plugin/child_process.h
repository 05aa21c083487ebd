// One plugin host child, seen from the parent: starting it, exchanging one
// fixed-size message with a deadline, and ending it without leaving a zombie.
#pragma once

#include <string>
#include <sys/types.h>

namespace attncheck {

class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess() { kill_and_reap(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Forks a child that runs host::run_host_child(dlopen_path, its socket, region_fd).
  bool start(const std::string& dlopen_path, int region_fd, std::string& why);
  bool running() const { return pid_ > 0; }

  enum class Wait { ok, died, timed_out, io_error };
  // Sends `n` bytes as one message (MSG_NOSIGNAL: a dead child is an answer, not a SIGPIPE).
  Wait send(const void* msg, std::size_t n);
  // Receives one message of exactly `n` bytes within `timeout_ms`. On `died`
  // the child is reaped and `how_it_ended` says how ("killed by SIGSEGV (...)").
  Wait receive(void* msg, std::size_t n, int timeout_ms, std::string& how_it_ended);

  // SIGKILL (if still running) and waitpid; closes the socket. Idempotent.
  void kill_and_reap();

 private:
  // After the socket said the child is gone: waits for its exit (bounded; a
  // child that closed the socket but lives on is killed) and describes it.
  std::string reap_after_hangup();

  pid_t pid_ = -1;
  int sock_ = -1;
};

}  // namespace attncheck
