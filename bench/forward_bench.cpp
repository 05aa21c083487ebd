// forward/<impl>/B<b>H<h>L<l>D<d>[/causal]: the built-in references' ABI
// forward functions on f32 inputs, called directly on a call encoded once (no
// encoding, poison or guard checks per call: those are O(L D), the call O(L^2 D)).
// Real time: `online` splits its work across the cores.
#include <string>

#include "bench_problems.h"
#include "impls/builtins.h"

namespace attncheck::bench {
namespace {

void forward_bench(benchmark::State& state, ForwardFn forward, const BenchShape& s) {
  const Problem p = gaussian_problem(DType::f32, s);
  EncodedCall raw(p);
  char err[256] = {0};
  for (auto _ : state) {
    if (forward(&raw.call, err, sizeof err) != ATTNCHECK_OK) {
      state.SkipWithError(err);
      break;
    }
    benchmark::DoNotOptimize(raw.call.out);
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = gflops_counter(s.flop());
  if (s.l >= memory_shape().l) state.counters["max_rss_MiB"] = max_rss_mib();
}

// naive holds a whole row of logits, reference the whole L x L matrix per
// head: neither is run at the memory shape (reference's would be 1 GiB per head
// and its time minutes).
[[maybe_unused]] const bool registered = [] {
  for (const char* name : {"reference", "naive", "online"}) {
    const BuiltinInfo* info = find_builtin(name);
    std::vector<BenchShape> shapes = forward_shapes();
    if (std::string(name) == "online") shapes.push_back(memory_shape());
    for (const BenchShape& s : shapes) {
      auto* b = benchmark::RegisterBenchmark(std::string("forward/").append(name).append("/").append(s.name()).c_str(),
                                             forward_bench, info->forward, s);
      b->UseRealTime()->Unit(benchmark::kMillisecond);
      limit_iterations(b, s);
    }
  }
  return true;
}();

}  // namespace
}  // namespace attncheck::bench
