// law_check/<law>: one law's default check (100 cases, every dtype) of the
// `reference` built-in, to see what a law costs apart from the others.
#include "bench_shapes.h"
#include "driver/law_run.h"
#include "impls/in_process.h"
#include "law_framework/law.h"

namespace attncheck::bench {
namespace {

void law_check(benchmark::State& state, const char* law_name) {
  auto impl = make_builtin("reference");
  const Law* law = find_law(law_name);
  RunOptions o;
  o.cases = 100;
  o.gen.dtypes = {DType::f32, DType::f64, DType::f16, DType::bf16};
  for (auto _ : state) benchmark::DoNotOptimize(run_law(*law, *impl, o));
}
BENCHMARK_CAPTURE(law_check, matches_oracle, "matches_oracle")->Name("law_check/matches_oracle")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(law_check, query_sensitivity, "query_sensitivity")->Name("law_check/query_sensitivity")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace attncheck::bench
