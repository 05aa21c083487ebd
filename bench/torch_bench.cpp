// torch/B<b>H<h>L<l>D<d>[/causal] (f32) and torch/f64/B..H..L..D..[/causal]:
// libtorch 1.13's at::_scaled_dot_product_attention called in this process on
// the same shapes as forward/ and oracle/, with libtorch's default intra-op
// threads (every core, as forward/online uses), so the two compare like for
// like. On CPU 1.13 runs its math path (scale, matmul, softmax, matmul:
// plugins/torch/torch_attention.cpp), holding the L x L scores per head.
//
// C++17 and libtorch's compile flags: built as its own object library (see
// bench/CMakeLists.txt), sharing only bench_shapes.h with the rest.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/ops/_scaled_dot_product_attention.h>

#include <string>
#include <thread>

#include "bench_shapes.h"

namespace attncheck::bench {
namespace {

void torch_bench(benchmark::State& state, at::ScalarType type, const BenchShape& s) {
  // Every core: the torch plugin's forward, when plugin_overhead/torch loads it
  // into this process, leaves libtorch at the one thread it sets.
  at::set_num_threads(static_cast<int>(std::thread::hardware_concurrency()));
  at::manual_seed(42);
  const auto options = at::TensorOptions().dtype(type);
  // q, k, v: [b, h, l, d], unit Gaussians.
  const at::Tensor q = at::randn({s.b, s.h, s.l, s.d}, options);
  const at::Tensor k = at::randn({s.b, s.h, s.l, s.d}, options);
  const at::Tensor v = at::randn({s.b, s.h, s.l, s.d}, options);
  for (auto _ : state) {
    // is_causal: ones(l, l).tril(), the ABI's TOP_LEFT rule.
    auto result = at::_scaled_dot_product_attention(q, k, v, {}, 0.0, false, s.causal);
    benchmark::DoNotOptimize(std::get<0>(result).data_ptr());
  }
  state.counters["GFLOP/s"] = gflops_counter(s.flop());
  state.counters["threads"] = at::get_num_threads();
}

[[maybe_unused]] const bool registered = [] {
  for (const BenchShape& s : forward_shapes()) {
    for (bool f64 : {false, true}) {
      const std::string name = std::string("torch/").append(f64 ? "f64/" : "").append(s.name());
      benchmark::RegisterBenchmark(name.c_str(), torch_bench, f64 ? at::kDouble : at::kFloat, s)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  return true;
}();

}  // namespace
}  // namespace attncheck::bench
