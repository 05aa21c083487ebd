// Splitting one computation across the machine's cores, for the oracle and the
// streaming reference at large shapes.
//
// The number of threads one computation may use is a thread-local limit: by
// default every core; a caller that already runs checks in parallel (`check
// --jobs N`) sets 1 in its workers with ScopedComputeThreads, so N workers do
// not each start N more threads. Small pieces of work stay on the calling
// thread: starting a thread costs tens of microseconds.
//
// Example usage:
//   // rows [0, n) of independent work, about `flop_per_item` each
//   parallel_for(n, flop_per_item, [&](int64_t begin, int64_t end) { for (auto i = begin; i < end; ++i) work(i); });
//   { ScopedComputeThreads one(1); oracle(p); }  // inside a worker of a parallel check
#pragma once

#include <cstdint>
#include <functional>

namespace attncheck {

// The threads one computation started on this thread may use (>= 1).
int compute_threads();

// Sets this thread's limit for its lifetime (0 = every core), then restores it.
class ScopedComputeThreads {
 public:
  explicit ScopedComputeThreads(int threads);
  ~ScopedComputeThreads();
  ScopedComputeThreads(const ScopedComputeThreads&) = delete;
  ScopedComputeThreads& operator=(const ScopedComputeThreads&) = delete;

 private:
  int previous_;
};

// Below this much arithmetic (in floating-point operations) a computation is
// not worth a second thread.
inline constexpr double kMinParallelFlop = 4e6;

// Calls body(begin, end) on contiguous chunks covering [0, items), on up to
// compute_threads() threads (the calling thread is one of them), in chunks of
// about equal size; serial when items * flop_per_item < kMinParallelFlop.
// body must be safe to run concurrently on disjoint ranges. An exception from
// body is rethrown on the calling thread after every chunk finished. The
// workers inherit a limit of 1: nested calls stay serial.
void parallel_for(int64_t items, double flop_per_item, const std::function<void(int64_t, int64_t)>& body);

}  // namespace attncheck
