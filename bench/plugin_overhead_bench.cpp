// plugin_overhead/<plugin>/<variant>/<shape>: one forward call of a plugin
//   host:       through the isolated plugin host: the call encoded into shared
//               memory, outputs poisoned, guard zones, a round trip to the child
//               process, the inputs compared afterwards, the outputs decoded;
//   in_process: the same .so dlopened into this process and called through
//               InProcessImplementation: every check the host makes, no isolation;
//   direct:     the plugin's forward function alone, on a call encoded once
//               (what the kernel costs by itself: the anchor of issue #12's
//               target, host at most 10% over direct at B1H8L4096D128 f32).
// Each is called once before it is timed: the first call sizes the shared
// region (the child maps it, both sides fault its pages in), which a check
// pays once per worker, not per call; libtorch's first call has its own
// set-up too. bench/run-table.sh prints host / direct and in_process / direct.
// Real time: the child's share of a call is not this process's CPU time.
#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "bench_problems.h"
#include "impls/in_process.h"
#include "plugin/plugin_host.h"
#include "problem/call_layout.h"

namespace attncheck::bench {
namespace {

enum class Variant { host, in_process, direct };

// The plugin's entry points, loaded into this process (kept loaded): v2 when
// it exports one (as the host prefers), else v1.
struct Entry {
  const attncheck_impl* v1 = nullptr;
  const attncheck_impl_v2* v2 = nullptr;
};
Entry load_entry(const std::string& path, std::string& error) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    error = dlerror();
    return {};
  }
  Entry e;
  if (auto v2 = reinterpret_cast<const attncheck_impl_v2* (*)()>(dlsym(handle, "attncheck_plugin_v2"))) e.v2 = v2();
  if (auto v1 = reinterpret_cast<const attncheck_impl* (*)()>(dlsym(handle, "attncheck_plugin_v1")); v1 && !e.v2)
    e.v1 = v1();
  if (!e.v1 && !e.v2) error = "no attncheck_plugin_v1 or attncheck_plugin_v2";
  return e;
}

// The forward function alone on one encoded call (the same region every time).
class DirectCall {
 public:
  DirectCall(const Entry& e, const Problem& p) : entry_(e), layout_(layout_for(p, e.v2 ? 2 : 1)) {
    region_.reset(static_cast<uint8_t*>(std::aligned_alloc(CallLayout::kAlign, layout_.total)));
    encode_call(p, layout_, region_.get());
    if (e.v2) v2_ = abi_call_v2(p, layout_, region_.get());
    else v1_ = abi_call(p, layout_, region_.get());
  }
  int run() {
    char err[512] = {0};
    return entry_.v2 ? entry_.v2->forward(&v2_, err, sizeof err) : entry_.v1->forward(&v1_, err, sizeof err);
  }

 private:
  struct Free { void operator()(uint8_t* p) const { std::free(p); } };
  Entry entry_;
  CallLayout layout_;
  std::unique_ptr<uint8_t, Free> region_;
  attncheck_call v1_{};
  attncheck_call_v2 v2_{};
};

void overhead_bench(benchmark::State& state, const std::string& path, Variant variant, const BenchShape& s) {
  std::string error;
  const Problem p = gaussian_problem(DType::f32, s);
  if (variant == Variant::direct) {
    const Entry e = load_entry(path, error);
    if (!e.v1 && !e.v2) {
      state.SkipWithError(std::string("cannot load ").append(path).append(": ").append(error).c_str());
      return;
    }
    DirectCall call(e, p);
    if (const int rc = call.run(); rc != ATTNCHECK_OK) {
      state.SkipWithError(("forward returned " + std::to_string(rc)).c_str());
      return;
    }
    for (auto _ : state) benchmark::DoNotOptimize(call.run());
  } else {
    std::unique_ptr<Implementation> impl;
    if (variant == Variant::host) {
      PluginOptions options;
      options.timeout_ms = 600000;  // a B1H8L4096D128 call of the example plugin takes about a minute
      impl = load_plugin(path, options, error);
    } else if (const Entry e = load_entry(path, error); e.v2) {
      impl = std::make_unique<InProcessImplementation>(e.v2->name, e.v2->forward, e.v2->features);
    } else if (e.v1) {
      impl = std::make_unique<InProcessImplementation>(e.v1->name, e.v1->forward);
    }
    if (!impl) {
      state.SkipWithError(std::string("cannot load ").append(path).append(": ").append(error).c_str());
      return;
    }
    impl->run(p);  // the untimed first call (see the top of this file)
    for (auto _ : state) {
      const Outcome o = impl->run(p);
      if (o.status != CallStatus::ok) {
        state.SkipWithError(std::string("call failed: ").append(o.message).c_str());
        break;
      }
    }
  }
  state.counters["GFLOP/s"] = gflops_counter(s.flop());
  state.counters["calls/s"] = benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
}

[[maybe_unused]] const bool registered = [] {
  struct Plugin {
    const char* name;
    const char* path;
    int large_iterations;  // the example's loops take about a minute at the large shape
  };
  std::vector<Plugin> plugins = {{"example_c", ATTNCHECK_EXAMPLE_PLUGIN, 1}};
#ifdef ATTNCHECK_TORCH_PLUGIN
  plugins.push_back({"torch", ATTNCHECK_TORCH_PLUGIN, 5});
#endif
  const BenchShape tiny{1, 1, 1, 1, false}, large{1, 8, 4096, 128, false};
  const std::pair<Variant, const char*> variants[] = {
      {Variant::host, "/host/"}, {Variant::in_process, "/in_process/"}, {Variant::direct, "/direct/"}};
  for (const Plugin& plugin : plugins)
    for (const BenchShape& s : {large, tiny})
      for (const auto& [variant, label] : variants) {
        const std::string name = std::string("plugin_overhead/").append(plugin.name).append(label).append(s.name());
        auto* b = benchmark::RegisterBenchmark(name.c_str(), overhead_bench, std::string(plugin.path), variant, s);
        b->UseRealTime();
        if (s.l > 1) b->Iterations(plugin.large_iterations)->Unit(benchmark::kSecond);
      }
  return true;
}();

}  // namespace
}  // namespace attncheck::bench
