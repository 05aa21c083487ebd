#include "cli/progress_line.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>

namespace attncheck {

ProgressLine::ProgressLine(std::ostream& err, bool enabled, std::size_t total)
    : err_(err), enabled_(enabled), total_(total) {}

void ProgressLine::working_on(const std::string& implementation, const std::string& law) {
  what_ = implementation + ": " + law;
  draw();
}

void ProgressLine::finished_one(long long judged_cases) {
  ++done_;
  judged_ += judged_cases;
  draw();
}

std::string ProgressLine::text() const {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  char head[64];
  const int width = static_cast<int>(std::to_string(total_).size());
  std::snprintf(head, sizeof head, "[%*zu/%zu] ", width, done_, total_);
  std::string s = head + what_;
  char tail[96];
  std::snprintf(tail, sizeof tail, "  %lld cases judged  %.1f s elapsed", judged_, elapsed);
  s += tail;
  // The remaining time from the mean so far: nothing to say before the first item.
  if (done_ > 0 && done_ < total_) {
    std::snprintf(tail, sizeof tail, ", ~%.0f s left", elapsed / static_cast<double>(done_) *
                                                           static_cast<double>(total_ - done_));
    s += tail;
  }
  return s;
}

void ProgressLine::draw() {
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  if (shown_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  std::string line = text();
  // One terminal line: a wrapped line cannot be redrawn in place.
  struct winsize ws {};
  const std::size_t columns = ::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col : 80;
  if (line.size() > columns - 1) line.resize(columns - 1);
  err_ << "\r\033[K" << line << std::flush;
  shown_ = true;
}

void ProgressLine::clear() {
  if (!enabled_ || !shown_) return;
  err_ << "\r\033[K" << std::flush;
  shown_ = false;
}

}  // namespace attncheck
