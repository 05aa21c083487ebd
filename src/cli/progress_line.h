// The one progress line of a long check or replay on a terminal (stderr):
//   [ 41/270] naive: matches_oracle (3 s)  3200 cases judged  12 s elapsed, ~70 s left
// It names what runs now (with --jobs N each worker's implementation: law, or
// "4 running, the oldest naive: matches_oracle (41 s)" when they do not fit),
// the cases judged so far, those of laws still running included, and a clock
// that advances every second while nothing finishes (tick(): from the loop
// that waits on the workers, or a ProgressTicker thread without workers).
// Redrawn in place (carriage return, erase line), at most ten times a second,
// and erased before anything else is printed, so stdout stays clean: clear()
// hides it until the next event, and tick() redraws only a line that shows,
// so it is never drawn into the middle of another line. Every member may be
// called from any thread. Disabled (every call does nothing) when the
// terminal mode says no progress.
//
// Example usage:
//   ProgressLine p(std::cerr, mode.progress, items);
//   p.working_on(0, "naive", "matches_oracle");   // slot 0 (a worker) starts an item
//   p.advanced(0, 40);                            // it has judged 40 cases so far
//   p.finished(0, judged);                        // its item is done
//   p.clear(); out << "...";                      // before printing a line
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

namespace attncheck {

class ProgressLine {
 public:
  ProgressLine(std::ostream& err, bool enabled, std::size_t total);
  ~ProgressLine() { clear(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool enabled() const { return enabled_; }
  void working_on(int slot, const std::string& implementation, const std::string& law);
  void advanced(int slot, long long judged_so_far);
  void finished(int slot, long long judged_cases);
  // Without slots (replay): what runs next, and one more done.
  void working_on(const std::string& implementation, const std::string& law) { working_on(0, implementation, law); }
  void finished_one(long long judged_cases) { finished(0, judged_cases); }
  void tick();   // redraw a line that shows (its clock)
  std::mutex* fork_mutex() { return &mutex_; }  // held across fork while a ProgressTicker runs
  void clear();  // erase the line (it is redrawn at the next event)

  // The text of the line (without the escapes) for `columns`, for tests.
  std::string text(std::size_t columns = 1000) const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Running {
    std::string what;
    Clock::time_point since;
    long long judged = 0;
  };
  std::string text_locked(std::size_t columns) const;
  void draw_locked(bool forced);
  std::ostream& err_;
  bool enabled_;
  mutable std::mutex mutex_;
  std::size_t total_, done_ = 0;
  long long judged_ = 0;  // by finished items
  std::map<int, Running> running_;
  Clock::time_point start_ = Clock::now(), last_draw_{};
  bool shown_ = false;
};

// A thread that ticks a progress line every kTickMilliseconds until it is
// destroyed: the clock of a run without workers, whose one thread is busy in
// the law. It only redraws (under the line's lock), and it exists only while
// such a run goes: the workers of --jobs are forked while no thread runs. A
// plugin host forked meanwhile (host_child.cpp forks without exec) cannot
// catch it mid-draw: a pthread_atfork handler holds the line's lock across
// every fork, so the child copies no lock held and no half-written line.
class ProgressTicker {
 public:
  explicit ProgressTicker(ProgressLine& line);
  ~ProgressTicker();
  ProgressTicker(const ProgressTicker&) = delete;
  ProgressTicker& operator=(const ProgressTicker&) = delete;

 private:
  ProgressLine& line_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace attncheck
