#include "cli/progress_line.h"

#include <pthread.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "run/worker_processes.h"

namespace attncheck {

namespace {

std::string seconds_text(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f s", s);
  return b;
}

// The line a ProgressTicker draws from its thread, if any: its lock is held
// across fork (ProgressTicker's comment says why).
std::atomic<ProgressLine*> g_ticked{nullptr};
std::mutex* g_held_across_fork = nullptr;

void lock_before_fork() {
  if (ProgressLine* line = g_ticked.load()) {
    g_held_across_fork = line->fork_mutex();
    g_held_across_fork->lock();
  }
}

void unlock_after_fork() {
  if (g_held_across_fork) g_held_across_fork->unlock();
  g_held_across_fork = nullptr;
}

}  // namespace

ProgressLine::ProgressLine(std::ostream& err, bool enabled, std::size_t total)
    : err_(err), enabled_(enabled), total_(total) {}

void ProgressLine::working_on(int slot, const std::string& implementation, const std::string& law) {
  std::lock_guard<std::mutex> lock(mutex_);
  running_[slot] = Running{implementation + ": " + law, Clock::now(), 0};
  draw_locked(false);
}

void ProgressLine::advanced(int slot, long long judged_so_far) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = running_.find(slot);
  if (it == running_.end()) return;
  it->second.judged = judged_so_far;
  draw_locked(false);
}

void ProgressLine::finished(int slot, long long judged_cases) {
  std::lock_guard<std::mutex> lock(mutex_);
  running_.erase(slot);
  ++done_;
  judged_ += judged_cases;
  draw_locked(false);
}

void ProgressLine::tick() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (shown_) draw_locked(true);
}

std::string ProgressLine::text(std::size_t columns) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return text_locked(columns);
}

std::string ProgressLine::text_locked(std::size_t columns) const {
  const Clock::time_point now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  char head[64];
  const int width = static_cast<int>(std::to_string(total_).size());
  std::snprintf(head, sizeof head, "[%*zu/%zu] ", width, done_, total_);
  long long judged = judged_;
  for (const auto& [slot, r] : running_) judged += r.judged;
  std::string tail = "  " + std::to_string(judged) + " cases judged  " + seconds_text(elapsed) + " elapsed";
  // The remaining time from the mean so far: nothing to say before the first item.
  if (done_ > 0 && done_ < total_)
    tail += ", ~" + seconds_text(elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_)) + " left";
  // What runs: every slot's item with its age, or, when that does not fit, a
  // count and the oldest (the one a reader waits on).
  std::string what;
  const Running* oldest = nullptr;
  for (const auto& [slot, r] : running_) {
    what += (what.empty() ? "" : ", ") + r.what + " (" + seconds_text(std::chrono::duration<double>(now - r.since).count()) + ")";
    if (!oldest || r.since < oldest->since) oldest = &r;
  }
  if (running_.size() > 1 && std::string(head).size() + what.size() + tail.size() > columns)
    what = std::to_string(running_.size()) + " running, the oldest " + oldest->what + " (" +
           seconds_text(std::chrono::duration<double>(now - oldest->since).count()) + ")";
  return head + what + tail;
}

void ProgressLine::draw_locked(bool forced) {
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  if (!forced && shown_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  // One terminal line: a wrapped line cannot be redrawn in place.
  struct winsize ws {};
  const std::size_t columns = ::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col : 80;
  std::string line = text_locked(columns - 1);
  if (line.size() > columns - 1) line.resize(columns - 1);
  err_ << "\r\033[K" << line << std::flush;
  shown_ = true;
}

void ProgressLine::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!enabled_ || !shown_) return;
  err_ << "\r\033[K" << std::flush;
  shown_ = false;
}

ProgressTicker::ProgressTicker(ProgressLine& line)
    : line_(line), thread_([this, &line] {
        std::unique_lock<std::mutex> lock(mutex_);
        while (!wake_.wait_for(lock, std::chrono::milliseconds(kTickMilliseconds), [this] { return stop_; }))
          line.tick();
      }) {
  static const int registered = pthread_atfork(lock_before_fork, unlock_after_fork, unlock_after_fork);
  (void)registered;
  g_ticked = &line_;
}

ProgressTicker::~ProgressTicker() {
  g_ticked = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

}  // namespace attncheck
