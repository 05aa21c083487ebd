// The one progress line of a long check or replay on a terminal (stderr):
//   [ 41/270] naive: matches_oracle  3200 cases judged  12.5 s elapsed, ~70 s left
// redrawn in place (carriage return, erase line), at most ten times a second,
// and erased before anything else is printed, so stdout stays clean. Disabled
// (every call does nothing) when the terminal mode says no progress.
//
// Example usage:
//   ProgressLine p(std::cerr, mode.progress, items);
//   p.working_on("naive", "matches_oracle");      // before an item, when known
//   p.finished_one(judged);                        // after each item
//   p.clear(); out << "...";                       // before printing a line
#pragma once

#include <chrono>
#include <cstddef>
#include <ostream>
#include <string>

namespace attncheck {

class ProgressLine {
 public:
  ProgressLine(std::ostream& err, bool enabled, std::size_t total);
  ~ProgressLine() { clear(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void working_on(const std::string& implementation, const std::string& law);
  void finished_one(long long judged_cases);
  void clear();  // erase the line (it is redrawn at the next update)

  // The text of the line (without the escapes), for tests.
  std::string text() const;

 private:
  void draw();
  using Clock = std::chrono::steady_clock;
  std::ostream& err_;
  bool enabled_;
  std::size_t total_, done_ = 0;
  long long judged_ = 0;
  std::string what_;
  Clock::time_point start_ = Clock::now(), last_draw_{};
  bool shown_ = false;
};

}  // namespace attncheck
