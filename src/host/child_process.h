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

  // The host's pid (its hello says it): a call's CPU time is measured from
  // the host's own at the call's start.
  void set_host_pid(pid_t pid) { host_pid_ = pid; }

  enum class Wait { ok, died, timed_out, io_error };
  // Sends `n` bytes as one message (MSG_NOSIGNAL: a dead child is an answer,
  // not a SIGPIPE), with `fd` attached (SCM_RIGHTS) when it is not -1.
  Wait send(const void* msg, std::size_t n, int fd = -1);
  // The limits of one wait (time_limits.h says why two): CPU time of the
  // plugin's processes, and wall-clock time.
  struct Limits {
    int cpu_ms = 2000;
    int wall_ms = 60000;
  };
  // What a wait took, for a timeout's message.
  struct Spent {
    double cpu_ms = 0, wall_ms = 0;
    bool by_wall = false;  // timed out on the wall-clock limit (else the CPU one)
    // "2010 ms of CPU time in 9400 ms": what a timeout's message reports.
    std::string text() const;
  };
  // Whose CPU time counts: a call's (the host's from the call's start, and
  // everything the plugin runs besides it), or a start's (the whole tree from
  // its fork: loading the plugin).
  enum class Counting { call, start };
  // Receives one message of exactly `n` bytes within `limits`. On `died`
  // the child and all it started are gone and `how_it_ended` says how
  // ("killed by SIGSEGV (...)"), even when a process the plugin started still
  // held the socket open.
  Wait receive(void* msg, std::size_t n, const Limits& limits, Counting counting, std::string& how_it_ended,
               Spent& spent);

  // Ends the host and every process it started, reaps the supervisor, closes
  // the sockets. Idempotent.
  void kill_and_reap();

 private:
  // The host is gone (the lifeline has a report, or the socket closed):
  // collects the report, reaps, and describes how it ended.
  std::string collect_end(int wait_ms);

  pid_t pid_ = -1;   // the supervisor
  pid_t host_pid_ = -1;  // the host, once its hello said
  int sock_ = -1;    // the call socket to the host
  int life_ = -1;    // the lifeline to the supervisor
  std::vector<std::pair<std::string, std::string>> environment_;
};

}  // namespace attncheck
