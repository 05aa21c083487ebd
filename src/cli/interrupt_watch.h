// Ctrl-C (SIGINT) and SIGTERM while `check` runs: the first asks the run to
// stop (run_checks ends its workers and plugin hosts, the laws not finished
// are reported not run, the results so far are printed and the reports
// written, exit status 130); a second one exits at once with 130 (the workers
// die with their parent, PR_SET_PDEATHSIG, and the plugin hosts with their
// supervisor's lifeline). The handlers are this object's: the previous ones
// come back when it is destroyed.
//
// Example usage:
//   InterruptWatch watch;
//   ... progress.interrupted = [] { return InterruptWatch::requested(); };
//   if (InterruptWatch::requested()) return 130;
#pragma once

#include <csignal>

namespace attncheck {

inline constexpr int kExitInterrupted = 130;  // 128 + SIGINT, as shells report it

class InterruptWatch {
 public:
  InterruptWatch();
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

  static bool requested();

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

}  // namespace attncheck
