// gemm_peak: an f32 2048^3 GEMM with Eigen on every core, the ceiling the
// other GFLOP/s figures are read against (bench/run-table.sh prints each as a
// fraction of it). Eigen is not built with OpenMP here, so the product is split
// by column blocks with parallel_for: C[:, cols] = A * B[:, cols] per thread.
// The kernel is compiled for this machine's ISA (gemm_kernel.cpp says why it
// lives in its own library); the label names the instruction sets Eigen used.
#include <cstdint>
#include <random>
#include <vector>

#include "bench_shapes.h"
#include "parallel/parallel_for.h"

extern "C" void attncheck_bench_gemm_cols(const float* a, const float* b, float* c, int64_t n, int64_t col_begin,
                                          int64_t col_end);
extern "C" const char* attncheck_bench_gemm_isa();

namespace attncheck::bench {
namespace {

void gemm_peak(benchmark::State& state) {
  constexpr int64_t n = 2048;
  constexpr int64_t kBlock = 64;  // columns per parallel_for item
  std::vector<float> a(n * n), b(n * n), c(n * n);
  std::mt19937 rng(42);
  std::normal_distribution<float> normal;
  for (float& x : a) x = normal(rng);
  for (float& x : b) x = normal(rng);
  const double flop = 2.0 * n * n * n;
  for (auto _ : state) {
    parallel_for(n / kBlock, flop / (n / kBlock), [&](int64_t begin, int64_t end) {
      attncheck_bench_gemm_cols(a.data(), b.data(), c.data(), n, begin * kBlock, end * kBlock);
    });
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] = gflops_counter(flop);
  state.counters["threads"] = compute_threads();
  state.SetLabel(attncheck_bench_gemm_isa());
}
BENCHMARK(gemm_peak)->Name("gemm_peak")->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace attncheck::bench
