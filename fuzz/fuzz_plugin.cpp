// fuzz_plugin: the checks of fuzz_differential (matches_oracle or one of the
// cheap laws, picked by the first two bytes as there) against a third-party implementation: the plugin named by
// $ATTNCHECK_PLUGIN, loaded once through the isolating host (a crash, hang or
// bad write in the plugin becomes a finding, never a dead fuzzer).
//
// Run: ATTNCHECK_PLUGIN=build/plugins/libexample_attention.so build-fuzz/fuzz/fuzz_plugin fuzz/corpus/fuzz_plugin
// Per-call limit: ATTNCHECK_PLUGIN_TIMEOUT_MS (default 2000).
// At a kernel's own shapes (its head_dim-128 fast path, its long rows): a
// profile and shape flags of `attncheck check` (fuzz_problems.h), e.g.
//   ATTNCHECK_FUZZ_PROFILE=decode ATTNCHECK_FUZZ_SHAPES="--head-dim 128 --kv-len 1..512" \
//     build-fuzz/fuzz/fuzz_plugin -max_len=65536 fuzz-work/p128
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "law_sweep.h"
#include "host/plugin_host.h"
#include "fuzz_problems.h"

using namespace attncheck;

namespace {

// The loaded plugin, as the one-element list pick_pair chooses from.
std::vector<std::unique_ptr<Implementation>>& plugin() {
  static std::vector<std::unique_ptr<Implementation>> impls;
  return impls;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::announce_shapes("fuzz_plugin");  // a bad ATTNCHECK_FUZZ_PROFILE / _SHAPES: exit 2 before the plugin loads
  const char* path = std::getenv("ATTNCHECK_PLUGIN");
  if (!path || !*path) {
    std::fprintf(stderr, "fuzz_plugin: set ATTNCHECK_PLUGIN to the plugin's shared library, e.g.\n"
                         "  ATTNCHECK_PLUGIN=build/plugins/libexample_attention.so fuzz_plugin CORPUS\n");
    std::exit(2);
  }
  PluginOptions options;
  if (const char* t = std::getenv("ATTNCHECK_PLUGIN_TIMEOUT_MS"); t && std::atoi(t) > 0) options.timeout_ms = std::atoi(t);
  std::string error;
  std::unique_ptr<Implementation> impl = load_plugin(path, options, error);
  if (!impl) {
    std::fprintf(stderr, "fuzz_plugin: cannot load ATTNCHECK_PLUGIN=%s: %s\n", path, error.c_str());
    std::exit(2);
  }
  std::fprintf(stderr, "fuzz_plugin: checking %s (%s)\n", impl->name().c_str(), impl->source().c_str());
  plugin().clear();
  plugin().push_back(std::move(impl));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<const Law*> laws = fuzz::differential_laws();
  if (plugin().empty()) LLVMFuzzerInitialize(nullptr, nullptr);  // a driver that skips the initializer
  const fuzz::Pick pick = fuzz::pick_pair(plugin(), laws, data, size);
  // Drawn within what the plugin declares (its ABI v2 features).
  for (Implementation* impl : pick.impls)
    fuzz::judge(*impl, fuzz::fuzz_problem(data, size, impl->features()), pick.laws);
  return 0;
}
