// backward/<impl>/B<b>H<h>L<l>D<d>[/causal]: the built-in references' ABI v2
// backward functions on f32 inputs, called directly on a backward call
// encoded once, after one forward call has left the implementation's own out
// and lse in it (FlashAttention-2's inputs). GFLOP/s counts 2.5 times the
// forward's FLOP, the five products of the gradients (dP = dO V^T, dV = P^T dO,
// dQ = dS K, dK = dS^T Q, and S = Q K^T recomputed) against forward's two, as
// FlashAttention's benchmarks do. Real time: `online` splits its work across
// the cores.
#include <cstdlib>
#include <memory>
#include <new>
#include <random>
#include <string>

#include "bench_problems.h"
#include "impls/builtins.h"

namespace attncheck::bench {
namespace {

// The backward problem of a BenchShape: gaussian_problem's q, k, v, a unit
// Gaussian dout, lse requested.
Problem backward_problem(const BenchShape& s) {
  Problem p = gaussian_problem(DType::f32, s);
  p.lse_requested = true;
  std::mt19937_64 rng(43);
  std::normal_distribution<double> normal;
  p.dout.resize(static_cast<std::size_t>(p.shape.out_size()));
  for (double& x : p.dout) x = round_to(DType::f32, normal(rng));
  return p;
}

void backward_bench(benchmark::State& state, const BuiltinInfo* info, const BenchShape& s) {
  const Problem p = backward_problem(s);
  const CallLayout layout = layout_for(p, 2);
  struct Free {
    void operator()(uint8_t* q) const { std::free(q); }
  };
  std::unique_ptr<uint8_t, Free> region(static_cast<uint8_t*>(std::aligned_alloc(CallLayout::kAlign, layout.total)));
  if (!region) throw std::bad_alloc();
  encode_call(p, layout, region.get());
  const attncheck_call_v2 call = abi_call_v2(p, layout, region.get());
  const attncheck_grad grad = abi_grad(p, layout, region.get());
  char err[256] = {0};
  if (info->forward_v2(&call, err, sizeof err) != ATTNCHECK_OK) {
    state.SkipWithError(err);
    return;
  }
  for (auto _ : state) {
    if (info->backward_v2(&call, &grad, err, sizeof err) != ATTNCHECK_OK) {
      state.SkipWithError(err);
      break;
    }
    benchmark::DoNotOptimize(grad.dq.data);
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = gflops_counter(2.5 * s.flop());
}

// L up to 1024 for reference (whole matrices) and naive (loops); online to 4096.
[[maybe_unused]] const bool registered = [] {
  for (const char* name : {"reference", "naive", "online"}) {
    const BuiltinInfo* info = find_builtin(name);
    for (const BenchShape& s : forward_shapes()) {
      if (s.l > 1024 && std::string(name) != "online") continue;
      auto* b = benchmark::RegisterBenchmark(std::string("backward/").append(name).append("/").append(s.name()).c_str(),
                                             backward_bench, info, s);
      b->UseRealTime()->Unit(benchmark::kMillisecond);
      limit_iterations(b, s, 2e10);
    }
  }
  return true;
}();

}  // namespace
}  // namespace attncheck::bench
