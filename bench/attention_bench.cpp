// Speed of the built-in implementations, the oracle, one law check, and the
// cost of isolating a plugin in its child process.
// Run: build/bench/attention_bench
#include <benchmark/benchmark.h>

#include "impls/in_process.h"
#include "laws/law.h"
#include "driver/law_run.h"
#include "oracle/oracle.h"
#include "plugin/plugin_host.h"
#include "problem/generators.h"

using namespace attncheck;

namespace {

// One head, q_len = kv_len = L, head_dim = value_dim = 64, unit Gaussians.
Problem square_problem(DType t, int64_t L) {
  GenOptions g;
  g.dtypes = {t};
  g.mask = g.causal = g.explicit_scale = false;
  g.families = kGaussian;
  g.max_batch = g.max_heads = 1;
  g.min_q_len = g.max_q_len = g.min_kv_len = g.max_kv_len = L;
  g.min_head_dim = g.max_head_dim = 64;
  g.same_dims = true;
  return sample_problem(g, 42, 100);
}

void BM_Implementation(benchmark::State& state, const char* name) {
  auto impl = make_builtin(name);
  const Problem p = square_problem(DType::f32, state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(impl->run(p));
  // 2 matrix products of L x L x 64: 4 L^2 64 flops.
  state.counters["GFLOP/s"] = benchmark::Counter(4.0 * 64 * state.range(0) * state.range(0),
                                                 benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK_CAPTURE(BM_Implementation, reference, "reference")->Arg(64)->Arg(256)->Arg(1024);
BENCHMARK_CAPTURE(BM_Implementation, naive, "naive")->Arg(64)->Arg(256)->Arg(1024);
BENCHMARK_CAPTURE(BM_Implementation, online, "online")->Arg(64)->Arg(256)->Arg(1024);

void BM_Oracle(benchmark::State& state) {
  const Problem p = square_problem(state.range(1) ? DType::f64 : DType::f32, state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(oracle(p));
}
BENCHMARK(BM_Oracle)->Args({64, 0})->Args({64, 1})->Args({256, 0})->Args({256, 1});

// A whole default law check (100 cases, as `attncheck check` runs it).
void BM_LawCheck(benchmark::State& state, const char* law_name) {
  auto impl = make_builtin("reference");
  const Law* law = find_law(law_name);
  RunOptions o;
  o.cases = 100;
  o.gen.dtypes = {DType::f32, DType::f64, DType::f16, DType::bf16};
  for (auto _ : state) benchmark::DoNotOptimize(run_law(*law, *impl, o));
}
BENCHMARK_CAPTURE(BM_LawCheck, matches_oracle, "matches_oracle")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LawCheck, query_sensitivity, "query_sensitivity")->Unit(benchmark::kMillisecond);

}  // namespace

// One call through the isolated plugin host (shared memory, poison, guards,
// input comparison, a round trip to the child) against the same kind of
// computation in-process, on a 1x1x1x1x1x1 problem where the overhead is all
// there is. Label: calls per second.
void BM_PluginOverheadTiny(benchmark::State& state, bool isolated) {
  std::string error;
  std::unique_ptr<Implementation> impl =
      isolated ? load_plugin(ATTNCHECK_EXAMPLE_PLUGIN, PluginOptions{}, error) : make_builtin("reference");
  if (!impl) { state.SkipWithError(("cannot load the example plugin: " + error).c_str()); return; }
  GenOptions g;
  g.dtypes = {DType::f32};
  g.max_batch = g.max_heads = g.max_q_len = g.max_kv_len = g.max_head_dim = g.max_value_dim = 1;
  g.mask = g.causal = false;
  const Problem tiny = sample_problem(g, 1, 0);
  for (auto _ : state) benchmark::DoNotOptimize(impl->run(tiny));
  state.counters["calls/s"] = benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
}
// Real time: the child's share of a call is not this process's CPU time.
BENCHMARK_CAPTURE(BM_PluginOverheadTiny, plugin_host, true)->UseRealTime();
BENCHMARK_CAPTURE(BM_PluginOverheadTiny, in_process, false)->UseRealTime();

BENCHMARK_MAIN();
