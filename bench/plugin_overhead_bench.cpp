// plugin_overhead/<plugin>/<host|in_process>/<shape>: one forward call of a
// plugin through the isolated plugin host (shared memory, poison, guard zones,
// input comparison, a round trip to the child process) against the same
// plugin's forward function loaded into this process with dlopen and called
// through InProcessImplementation, which encodes, poisons and checks exactly
// as the host does. The difference is what isolation costs; the target is at
// most 10% at B1H8L4096D128 f32 (bench/run-table.sh prints the ratio). At
// B1H1L1D1 the call is nothing and the overhead is all there is.
// Real time: the child's share of a call is not this process's CPU time.
#include <dlfcn.h>

#include <memory>
#include <string>

#include "bench_problems.h"
#include "impls/in_process.h"
#include "plugin/plugin_host.h"

namespace attncheck::bench {
namespace {

// The plugin's forward function, loaded into this process (kept loaded).
std::unique_ptr<Implementation> load_in_process(const std::string& path, std::string& error) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    error = dlerror();
    return nullptr;
  }
  using Entry = const attncheck_impl* (*)();
  const auto entry = reinterpret_cast<Entry>(dlsym(handle, "attncheck_plugin_v1"));
  const attncheck_impl* impl = entry ? entry() : nullptr;
  if (!impl) {
    error = "no attncheck_plugin_v1";
    return nullptr;
  }
  return std::make_unique<InProcessImplementation>(impl->name, impl->forward);
}

void overhead_bench(benchmark::State& state, const std::string& path, bool isolated, const BenchShape& s) {
  std::string error;
  PluginOptions options;
  options.timeout_ms = 600000;  // a B1H8L4096D128 call of the example plugin takes about a minute
  std::unique_ptr<Implementation> impl = isolated ? load_plugin(path, options, error) : load_in_process(path, error);
  if (!impl) {
    state.SkipWithError(std::string("cannot load ").append(path).append(": ").append(error).c_str());
    return;
  }
  const Problem p = gaussian_problem(DType::f32, s);
  for (auto _ : state) {
    const Outcome o = impl->run(p);
    if (o.status != CallStatus::ok) {
      state.SkipWithError(std::string("call failed: ").append(o.message).c_str());
      break;
    }
  }
  state.counters["GFLOP/s"] = gflops_counter(s.flop());
  state.counters["calls/s"] = benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
}

[[maybe_unused]] const bool registered = [] {
  struct Plugin {
    const char* name;
    const char* path;
  };
  std::vector<Plugin> plugins = {{"example_c", ATTNCHECK_EXAMPLE_PLUGIN}};
#ifdef ATTNCHECK_TORCH_PLUGIN
  plugins.push_back({"torch", ATTNCHECK_TORCH_PLUGIN});
#endif
  const BenchShape tiny{1, 1, 1, 1, false}, large{1, 8, 4096, 128, false};
  for (const Plugin& plugin : plugins)
    for (const BenchShape& s : {large, tiny})
      for (bool isolated : {true, false}) {
        const std::string name = std::string("plugin_overhead/")
                                     .append(plugin.name)
                                     .append(isolated ? "/host/" : "/in_process/")
                                     .append(s.name());
        auto* b = benchmark::RegisterBenchmark(name.c_str(), overhead_bench, std::string(plugin.path), isolated, s);
        b->UseRealTime();
        if (s.l > 1) b->Iterations(1)->Unit(benchmark::kSecond);
      }
  return true;
}();

}  // namespace
}  // namespace attncheck::bench
