// One plugin host child, seen from the parent: starting it (behind its
// supervisor, supervisor.h), exchanging one fixed-size message with a
// deadline, and ending it and everything it started without leaving a zombie.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>
#include <sys/types.h>

namespace attncheck {

class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess() { kill_and_reap(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Forks the supervisor, which forks the host child that runs
  // host::run_host_child(dlopen_path, its socket, region_fd) and stops it when
  // its resident memory passes `memory_limit_bytes` (0: no limit).
  bool start(const std::string& dlopen_path, int region_fd, uint64_t memory_limit_bytes, std::string& why);
  bool running() const { return pid_ > 0; }
  // Variables the host child sets (setenv) before it loads the plugin, on every start.
  void set_environment(std::vector<std::pair<std::string, std::string>> environment) {
    environment_ = std::move(environment);
  }

  enum class Wait { ok, died, timed_out, io_error };
  // Sends `n` bytes as one message (MSG_NOSIGNAL: a dead child is an answer,
  // not a SIGPIPE), with `fd` attached (SCM_RIGHTS) when it is not -1.
  Wait send(const void* msg, std::size_t n, int fd = -1);
  // Receives one message of exactly `n` bytes within `timeout_ms`. On `died`
  // the child and all it started are gone and `how_it_ended` says how
  // ("killed by SIGSEGV (...)"), even when a process the plugin started still
  // held the socket open.
  Wait receive(void* msg, std::size_t n, int timeout_ms, std::string& how_it_ended);

  // Ends the host and every process it started, reaps the supervisor, closes
  // the sockets. Idempotent.
  void kill_and_reap();

 private:
  // The host is gone (the lifeline has a report, or the socket closed):
  // collects the report, reaps, and describes how it ended.
  std::string collect_end(int wait_ms);

  pid_t pid_ = -1;   // the supervisor
  int sock_ = -1;    // the call socket to the host
  int life_ = -1;    // the lifeline to the supervisor
  std::vector<std::pair<std::string, std::string>> environment_;
};

}  // namespace attncheck
