// parallel_for covers every item exactly once, honours the thread limit, and
// passes a worker's exception to the caller.
#include "parallel/parallel_for.h"

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace attncheck {
namespace {

TEST(ParallelFor, CoversEveryItemOnce) {
  for (int64_t items : {1, 2, 3, 7, 1000}) {
    std::vector<std::atomic<int>> seen(static_cast<std::size_t>(items));
    parallel_for(items, 1e9, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) seen[static_cast<std::size_t>(i)]++;
    });
    for (auto& s : seen) EXPECT_EQ(s.load(), 1) << items;
  }
}

TEST(ParallelFor, SmallWorkStaysOnTheCaller) {
  const auto caller = std::this_thread::get_id();
  parallel_for(100, 1.0, [&](int64_t, int64_t) { EXPECT_EQ(std::this_thread::get_id(), caller); });
}

TEST(ParallelFor, LimitOfOneIsSerialAndRestored) {
  const int before = compute_threads();
  {
    ScopedComputeThreads one(1);
    EXPECT_EQ(compute_threads(), 1);
    std::set<std::thread::id> ids;
    std::mutex m;
    parallel_for(64, 1e9, [&](int64_t, int64_t) {
      std::lock_guard<std::mutex> l(m);
      ids.insert(std::this_thread::get_id());
    });
    EXPECT_EQ(ids.size(), 1u);
  }
  EXPECT_EQ(compute_threads(), before);
}

TEST(ParallelFor, WorkersAreSerialInside) {
  ScopedComputeThreads two(2);
  parallel_for(2, 1e9, [&](int64_t, int64_t) { EXPECT_EQ(compute_threads(), 1); });
}

TEST(ParallelFor, ExceptionReachesTheCaller) {
  ScopedComputeThreads two(2);
  EXPECT_THROW(parallel_for(2, 1e9, [](int64_t b, int64_t) { if (b > 0) throw std::runtime_error("chunk"); }),
               std::runtime_error);
}

}  // namespace
}  // namespace attncheck
