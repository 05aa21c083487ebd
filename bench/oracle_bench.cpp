// Throughput of oracle() at the shapes of issue #12, per dtype and thread
// count: GFLOP/s with FLOP = 4 B H Lq Lk D (the logits and P.V products of
// attention, as the issue counts them), the best of a few repetitions.
//
//   build/bench/oracle_bench [--dtype f64|f32] [--reps N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "oracle/oracle.h"
#include "parallel/parallel_for.h"
#include "problem/problem.h"

namespace {

using namespace attncheck;

// Gaussian q, k, v of the shape, rounded to the dtype (exact for f64).
Problem gaussian(DType t, const Shape& sh, uint64_t seed) {
  Problem p = make_problem(t, sh);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  for (auto* x : {&p.q, &p.k, &p.v})
    for (double& e : *x) e = n01(rng);
  round_tensors(p);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  DType t = DType::f64;
  int reps = 3;
  for (int a = 1; a + 1 < argc; a += 2) {
    if (!std::strcmp(argv[a], "--dtype")) t = std::strcmp(argv[a + 1], "f32") ? DType::f64 : DType::f32;
    else if (!std::strcmp(argv[a], "--reps")) reps = std::max(1, std::atoi(argv[a + 1]));
  }
  const Shape shapes[] = {{1, 8, 1024, 1024, 64, 64}, {1, 8, 4096, 4096, 128, 128}};
  for (const Shape& sh : shapes) {
    const Problem p = gaussian(t, sh, 1);
    const double flop = 4.0 * sh.batch * sh.heads * sh.q_len * sh.kv_len * sh.head_dim;
    for (int threads : {1, 2}) {
      ScopedComputeThreads limit(threads);
      double best = 1e300;
      for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        const OracleResult o = oracle(p);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = std::min(best, s);
        if (o.exact.empty()) return 1;
      }
      std::printf("%s B%lld H%lld L%lld D%lld, %d thread(s): %.3f s, %.3f GFLOP/s\n",
                  std::string(dtype_name(t)).c_str(), static_cast<long long>(sh.batch),
                  static_cast<long long>(sh.heads), static_cast<long long>(sh.q_len),
                  static_cast<long long>(sh.head_dim), threads, best, flop / best * 1e-9);
      std::fflush(stdout);
    }
  }
  return 0;
}
