// check/<impl>: one whole default `attncheck check --impl <impl>` (every law,
// 100 cases each, every dtype the built-in offers, the probes first) through
// the library's run_check, with a fixed seed and the console report discarded.
// One iteration, in seconds; no FLOP counter (the cases' shapes are drawn).
#include <sstream>
#include <string>

#include "bench_shapes.h"
#include "cli/check_command.h"
#include "impls/builtins.h"

namespace attncheck::bench {
namespace {

void check_bench(benchmark::State& state, const std::string& impl) {
  CheckArgs args;
  args.impls = {impl};
  args.seed = 20261130;  // the test presets' ATTNCHECK_SEED
  int status = 0;
  for (auto _ : state) {
    std::ostringstream out, err;
    status = run_check(args, out, err);
  }
  // 0: every law passed; 1: a law failed (the zoo's expected outcome); 2: could not run.
  if (status == 2) state.SkipWithError("attncheck check could not run");
  state.counters["exit_status"] = status;
}

[[maybe_unused]] const bool registered = [] {
  for (const BuiltinInfo& b : builtins())
    benchmark::RegisterBenchmark(std::string("check/").append(b.name).c_str(), check_bench, std::string(b.name))
        ->Iterations(1)
        ->UseRealTime()
        ->Unit(benchmark::kSecond);
  return true;
}();

}  // namespace
}  // namespace attncheck::bench
