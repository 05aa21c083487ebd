#include "parallel/parallel_for.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace attncheck {

namespace {

int hardware_threads() {
  static const int n = std::max(1u, std::thread::hardware_concurrency());
  return n;
}

thread_local int t_limit = 0;  // 0: every core

}  // namespace

int compute_threads() { return t_limit > 0 ? t_limit : hardware_threads(); }

ScopedComputeThreads::ScopedComputeThreads(int threads) : previous_(t_limit) { t_limit = std::max(0, threads); }
ScopedComputeThreads::~ScopedComputeThreads() { t_limit = previous_; }

void parallel_for(int64_t items, double flop_per_item, const std::function<void(int64_t, int64_t)>& body) {
  if (items <= 0) return;
  const double total = static_cast<double>(items) * flop_per_item;
  const int64_t by_work = static_cast<int64_t>(total / kMinParallelFlop);
  const int64_t threads = std::min<int64_t>({compute_threads(), items, std::max<int64_t>(1, by_work)});
  if (threads <= 1) {
    body(0, items);
    return;
  }
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto run = [&](int64_t begin, int64_t end) {
    ScopedComputeThreads serial(1);
    try {
      body(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(threads - 1));
  // Chunk t covers [items * t / threads, items * (t + 1) / threads).
  for (int64_t t = 1; t < threads; ++t) workers.emplace_back(run, items * t / threads, items * (t + 1) / threads);
  run(0, items / threads);
  for (std::thread& w : workers) w.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace attncheck
