// grad_oracle/<dtype>/B1H<h>L1024D64: the gradient oracle (exact dq, dk, dv and
// their bounds, src/oracle/grad_oracle.h) on a unit Gaussian problem with a
// unit Gaussian dout. f64 runs 2 heads (its x87 path is the slow one), f32
// the standard 8. What tests/core/grad_oracle_test.cpp's
// GradOracle.LargeProblemCompletes judges (finite bounds) this measures: the
// seconds one large problem costs, which a busy machine changes and no verdict
// may depend on. Real time: the oracle splits its heads across the cores.
#include <random>
#include <string>

#include "bench_problems.h"
#include "oracle/grad_oracle.h"

namespace attncheck::bench {
namespace {

void grad_oracle_bench(benchmark::State& state, DType dtype, int64_t heads) {
  Problem p = gaussian_problem(dtype, BenchShape{1, heads, 1024, 64, false});
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal;
  p.dout.resize(static_cast<std::size_t>(p.shape.out_size()));
  for (double& x : p.dout) x = round_to(dtype, normal(rng));
  for (auto _ : state) benchmark::DoNotOptimize(grad_oracle(p));
  state.counters["GFLOP/s"] = gflops_counter(2.5 * BenchShape{1, heads, 1024, 64, false}.flop());
}

[[maybe_unused]] const bool registered = [] {
  for (auto [dtype, heads] : {std::pair{DType::f32, int64_t{8}}, std::pair{DType::f64, int64_t{2}}}) {
    const std::string name = std::string("grad_oracle/") + std::string(dtype_name(dtype)) + "/B1H" +
                             std::to_string(heads) + "L1024D64";
    auto* b = benchmark::RegisterBenchmark(name.c_str(), grad_oracle_bench, dtype, heads);
    b->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(1);
  }
  return true;
}();

}  // namespace
}  // namespace attncheck::bench
