#include "cli/interrupt_watch.h"

#include <unistd.h>

#include <atomic>

namespace attncheck {

namespace {

std::atomic<int> g_requests{0};
static_assert(std::atomic<int>::is_always_lock_free, "read and written in a signal handler");

void on_signal(int) {
  if (g_requests.fetch_add(1) == 0) return;  // the first: the run stops at its next step
  // The second: now. Only async-signal-safe calls here: erase a progress line, say why, leave.
  static const char text[] = "\r\033[K\nattncheck: interrupted again: exiting at once\n";
  [[maybe_unused]] const ssize_t w = ::write(STDERR_FILENO, text, sizeof text - 1);
  _exit(kExitInterrupted);
}

}  // namespace

InterruptWatch::InterruptWatch() {
  g_requests = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a wait on the workers wakes up to see it
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
}

InterruptWatch::~InterruptWatch() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

bool InterruptWatch::requested() { return g_requests.load() > 0; }

}  // namespace attncheck
