// plugin_overhead/<plugin>/<variant>/<shape>: one forward call of a plugin
//   host:       through the isolated plugin host: the call encoded into shared
//               memory, outputs poisoned, guard zones, a round trip to the child
//               process, the inputs compared afterwards, the outputs decoded;
//   in_process: the same .so dlopened into this process and called through
//               InProcessImplementation: every check the host makes, no isolation;
//   direct:     the plugin's forward function alone, on a call encoded once
//               (what the kernel costs by itself: the anchor of issue #12's
//               target, host at most 10% over direct at B1H8L4096D128 f32).
//   paired:     all three, each call timed by itself, in turn (the order
//               rotating from round to round); its counters host/direct and
//               in_process/direct are ratios of the medians. Side by side, so
//               a slow spell of the machine (this 2-core VM's timings swing by
//               a third) falls on all three: the figure issue #12's target
//               is judged by. Its time is a round's (three calls). Before
//               each call at the large shape it pauses a second, untimed:
//               without it the previous call's spinning thread pools made
//               host / direct 1.59 and in-process / direct 1.39 (2026-12-02).
// Each is called once before it is timed: the first call sizes the shared
// region (the child maps it, both sides fault its pages in), which a check
// pays once per worker, not per call; libtorch's first call has its own
// set-up too. bench/run-table.sh prints host / direct and in_process / direct.
// Real time: the child's share of a call is not this process's CPU time.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_problems.h"
#include "impls/in_process.h"
#include "host/plugin_host.h"
#include "call/call_layout.h"

namespace attncheck::bench {
namespace {

enum class Variant { host, in_process, direct, paired };

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

// The plugin through the host (host) or dlopened into this process (in_process).
std::unique_ptr<Implementation> load_impl(const std::string& path, Variant variant, std::string& error) {
  if (variant == Variant::host) {
    PluginOptions options;
    options.timeout_ms = 600000;  // a B1H8L4096D128 call of the example plugin takes about a minute
    return load_plugin(path, options, error);
  }
  const Entry e = load_entry(path, error);
  if (e.v2) return std::make_unique<InProcessImplementation>(e.v2->name, e.v2->forward, e.v2->features);
  if (e.v1) return std::make_unique<InProcessImplementation>(e.v1->name, e.v1->forward);
  return nullptr;
}

double median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const std::size_t n = x.size();
  return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

// settle_ms: the pause before each call (below); 0 for the tiny shape, whose
// calls start no threads.
void paired_bench(benchmark::State& state, const std::string& path, const Problem& p, int settle_ms) {
  std::string error;
  const std::unique_ptr<Implementation> host = load_impl(path, Variant::host, error);
  const std::unique_ptr<Implementation> in_process = host ? load_impl(path, Variant::in_process, error) : nullptr;
  const Entry e = load_entry(path, error);
  if (!host || !in_process || (!e.v1 && !e.v2)) {
    state.SkipWithError(std::string("cannot load ").append(path).append(": ").append(error).c_str());
    return;
  }
  DirectCall direct(e, p);
  // The untimed first calls (see the top of this file).
  if (host->run(p).status != CallStatus::ok || in_process->run(p).status != CallStatus::ok ||
      direct.run() != ATTNCHECK_OK) {
    state.SkipWithError("the first call failed");
    return;
  }
  std::vector<double> times[3];  // host, in_process, direct: seconds per call
  int round = 0;
  for (auto _ : state) {
    for (int k = 0; k < 3; ++k) {
      const int which = (round + k) % 3;
      // A pause before each call, untimed: the previous call's thread pools
      // (libtorch's OpenMP, OpenBLAS) spin-wait for a while after it returns,
      // in the child or here, and would take a core from this call.
      if (settle_ms > 0) {
        state.PauseTiming();
        std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
        state.ResumeTiming();
      }
      const auto t0 = std::chrono::steady_clock::now();
      bool ok = true;
      if (which == 2) ok = direct.run() == ATTNCHECK_OK;
      else ok = (which == 0 ? host : in_process)->run(p).status == CallStatus::ok;
      times[which].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (!ok) {
        state.SkipWithError("a call failed");
        return;
      }
    }
    ++round;
  }
  const double d = median(times[2]);
  state.counters["host/direct"] = median(times[0]) / d;
  state.counters["in_process/direct"] = median(times[1]) / d;
}

void overhead_bench(benchmark::State& state, const std::string& path, Variant variant, const BenchShape& s) {
  std::string error;
  const Problem p = gaussian_problem(DType::f32, s);
  if (variant == Variant::paired) {
    paired_bench(state, path, p, s.l > 1 ? 1000 : 0);
  } else if (variant == Variant::direct) {
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
    const std::unique_ptr<Implementation> impl = load_impl(path, variant, error);
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
  state.counters["GFLOP/s"] = gflops_counter(s.flop() * (variant == Variant::paired ? 3 : 1));
  state.counters["calls/s"] = benchmark::Counter(variant == Variant::paired ? 3 : 1,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

[[maybe_unused]] const bool registered = [] {
  struct Plugin {
    const char* name;
    const char* path;
    int large_iterations;  // the example's loops take about a minute at the large shape
    int paired_rounds;     // rounds of the paired variant at the large shape (0: none)
  };
  std::vector<Plugin> plugins = {{"example_c", ATTNCHECK_EXAMPLE_PLUGIN, 1, 0}};
#ifdef ATTNCHECK_TORCH_PLUGIN
  plugins.push_back({"torch", ATTNCHECK_TORCH_PLUGIN, 5, 9});
#endif
  const BenchShape tiny{1, 1, 1, 1, false}, large{1, 8, 4096, 128, false};
  const std::pair<Variant, const char*> variants[] = {
      {Variant::host, "/host/"},
      {Variant::in_process, "/in_process/"},
      {Variant::direct, "/direct/"},
      {Variant::paired, "/paired/"}};
  for (const Plugin& plugin : plugins)
    for (const BenchShape& s : {large, tiny})
      for (const auto& [variant, label] : variants) {
        if (variant == Variant::paired && s.l > 1 && plugin.paired_rounds == 0) continue;
        const std::string name = std::string("plugin_overhead/").append(plugin.name).append(label).append(s.name());
        auto* b = benchmark::RegisterBenchmark(name.c_str(), overhead_bench, std::string(plugin.path), variant, s);
        b->UseRealTime();
        if (s.l > 1)
          b->Iterations(variant == Variant::paired ? plugin.paired_rounds : plugin.large_iterations)
              ->Unit(benchmark::kSecond);
      }
  return true;
}();

}  // namespace
}  // namespace attncheck::bench
