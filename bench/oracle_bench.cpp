// oracle/<dtype>/B<b>H<h>L<l>D<d>[/causal]: the oracle (exact output, bound,
// entropy, domain) on f32 and f64 problems of the standard shapes. The FLOP
// counted is the forward's, 4 B H Lq Lk D, whatever extra the oracle spends on
// its bound: the figure says how far it is from a forward call.
#include <string>

#include "bench_problems.h"
#include "oracle/oracle.h"

namespace attncheck::bench {
namespace {

void oracle_bench(benchmark::State& state, DType dtype, const BenchShape& s) {
  const Problem p = gaussian_problem(dtype, s);
  for (auto _ : state) benchmark::DoNotOptimize(oracle(p));
  state.counters["GFLOP/s"] = gflops_counter(s.flop());
  if (s.l >= memory_shape().l) state.counters["max_rss_MiB"] = max_rss_mib();
}

// Above 1 GFLOP a call takes seconds (0.45 GFLOP/s when written): one iteration.
constexpr double kOneIterationFlop = 1e9;

[[maybe_unused]] const bool registered = [] {
  for (DType dtype : {DType::f32, DType::f64}) {
    std::vector<BenchShape> shapes = forward_shapes();
    if (dtype == DType::f32) shapes.push_back(memory_shape());
    for (const BenchShape& s : shapes) {
      const std::string name =
          std::string("oracle/").append(dtype_name(dtype)).append("/").append(s.name());
      auto* b = benchmark::RegisterBenchmark(name.c_str(), oracle_bench, dtype, s);
      b->UseRealTime()->Unit(benchmark::kMillisecond);
      limit_iterations(b, s, kOneIterationFlop);
    }
  }
  return true;
}();

}  // namespace
}  // namespace attncheck::bench
