// python_bridge/numpy/B1H8L1024D64/{host,own}: one f32 forward call of
// examples/python/numpy_attention.py:attention through the Python bridge and the
// isolated plugin host (shared memory, poison, guards, the round trip to the
// child, NumPy views, the kwargs, the result's conversion and strided write)
// against the same function's own time, measured inside Debian's Python on
// arrays of the same shape (`own`: ATTNCHECK_PYTHON -c timeit, reported as
// manual time). Target: host at most 2x own (docs/python.md, "Overhead").
#include <cstdio>
#include <memory>
#include <string>

#include "bench_problems.h"
#include "host/plugin_host.h"

namespace attncheck::bench {
namespace {

const std::string kTarget = std::string(ATTNCHECK_SOURCE_DIR) + "/examples/python/numpy_attention.py:attention";

void host_bench(benchmark::State& state, const BenchShape& s) {
  PluginOptions options;
  options.timeout_ms = 600000;
  options.environment.emplace_back("ATTNCHECK_PYTHON_TARGET", kTarget);
  std::string error;
  std::unique_ptr<Implementation> impl = load_plugin(ATTNCHECK_PYTHON_BRIDGE, options, error);
  if (!impl) {
    state.SkipWithError(("cannot load the bridge: " + error).c_str());
    return;
  }
  const Problem p = gaussian_problem(DType::f32, s);
  for (auto _ : state) {
    const Outcome o = impl->run(p);
    if (o.status != CallStatus::ok) {
      state.SkipWithError(("call failed: " + o.message).c_str());
      break;
    }
  }
}

// The function timed by Python itself: seconds per call, the best of 3 repeats.
void own_bench(benchmark::State& state, const BenchShape& s) {
  const std::string script =
      "import sys, timeit, numpy as np; sys.path.insert(0, '" ATTNCHECK_SOURCE_DIR "/examples/python'); "
      "from numpy_attention import attention; r = np.random.default_rng(1); "
      "q, k, v = (r.standard_normal((" + std::to_string(s.b) + ", " + std::to_string(s.h) + ", " +
      std::to_string(s.l) + ", " + std::to_string(s.d) + "), dtype=np.float32) for _ in range(3)); "
      "[a.setflags(write=False) for a in (q, k, v)]; "
      "print(min(timeit.repeat(lambda: attention(q, k, v, mask=None, causal='none', scale=None), number=1, repeat=3)))";
  const std::string command = std::string(ATTNCHECK_PYTHON) + " -c \"" + script + "\"";
  for (auto _ : state) {
    FILE* p = popen(command.c_str(), "r");
    double seconds = -1;
    if (!p || std::fscanf(p, "%lf", &seconds) != 1) seconds = -1;
    if (p) pclose(p);
    if (seconds <= 0) {
      state.SkipWithError(("could not time the function in Python: " + command).c_str());
      break;
    }
    state.SetIterationTime(seconds);
  }
}

[[maybe_unused]] const bool registered = [] {
  const BenchShape s{1, 8, 1024, 64, false};
  const std::string base = "python_bridge/numpy/" + s.name();
  benchmark::RegisterBenchmark((base + "/host").c_str(), host_bench, s)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark((base + "/own").c_str(), own_bench, s)
      ->UseManualTime()
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace
}  // namespace attncheck::bench
