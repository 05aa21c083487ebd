// oracle/<dtype>/B<b>H<h>L<l>D<d>[/causal]: the oracle (exact output, bound,
// entropy, domain) on f32 and f64 problems of the standard shapes. The FLOP
// counted is the forward's, 4 B H Lq Lk D, whatever extra the oracle spends on
// its bound: the figure says how far it is from a forward call.
// oracle/<dtype>/B1H8L1024D64/v2-logits: the same with every ABI v2 feature
// that changes the logits (soft-cap 30, a full N(0, 1) bias, the standard
// ALiBi slopes, sinks of 1.5), which go through the logit chain per key.
#include <cmath>
#include <random>
#include <string>

#include "bench_problems.h"
#include "oracle/oracle.h"

namespace attncheck::bench {
namespace {

// The double path's own arithmetic a visible (query, key) pair, in float
// operations (a double operation counted as two: half the lanes a vector),
// head_dim D = value_dim: the logits q.k_j in double and the bound's
// sum_d |q_d| |k_jd| in float (2D double + 2D float = 6D), the output
// sum_j w_j v_jc in double and the bound's sum_j p_j |v_jc| in float (6D),
// the deviation sum_j devw_j |v_jc - o_c| in float (a subtraction and a
// multiply-add: 3D). Per-key work (weights, shifts) is left out. Against
// gemm_peak (float, every core) it says how near the machine's ceiling the
// oracle's kernels run; libtorch's f64 SDPA does 4D double operations a pair, 8D.
constexpr double kDoublePathFloatOpsPerForwardFlop = 15.0 / 4.0;  // 15D against the forward's 4D

void oracle_bench(benchmark::State& state, DType dtype, const BenchShape& s) {
  const Problem p = gaussian_problem(dtype, s);
  for (auto _ : state) benchmark::DoNotOptimize(oracle(p));
  state.counters["GFLOP/s"] = gflops_counter(s.flop());
  if (dtype == DType::f32) state.counters["f32_op_GFLOP/s"] = gflops_counter(s.flop() * kDoublePathFloatOpsPerForwardFlop);
  if (s.l >= memory_shape().l) state.counters["max_rss_MiB"] = max_rss_mib();
}

void oracle_v2_logits_bench(benchmark::State& state, DType dtype, const BenchShape& s) {
  Problem p = gaussian_problem(dtype, s);
  p.softcap = 30;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  p.bias.resize(p.bias_broadcast.size(p.shape));
  for (double& x : p.bias) x = round_to(dtype, normal(rng));
  for (int64_t h = 0; h < s.h; ++h) {
    p.alibi_slopes.push_back(std::exp2(-8.0 * static_cast<double>(h + 1) / static_cast<double>(s.h)));
    p.sinks.push_back(1.5);
  }
  for (auto _ : state) benchmark::DoNotOptimize(oracle(p));
  state.counters["GFLOP/s"] = gflops_counter(s.flop());
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
  for (DType dtype : {DType::f32, DType::f64}) {
    const BenchShape s{1, 8, 1024, 64, false};
    const std::string name = std::string("oracle/").append(dtype_name(dtype)).append("/").append(s.name()).append("/v2-logits");
    auto* b = benchmark::RegisterBenchmark(name.c_str(), oracle_v2_logits_bench, dtype, s);
    b->UseRealTime()->Unit(benchmark::kMillisecond);
    limit_iterations(b, s, kOneIterationFlop);
  }
  return true;
}();

}  // namespace
}  // namespace attncheck::bench
