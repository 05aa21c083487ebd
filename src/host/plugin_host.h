// Third-party implementations, loaded from a shared library exporting the
// pinned C ABI (include/attncheck/plugin.h, plugin_v2.h, plugin_v3.h: the
// highest version it exports is the one called) and run in an isolated child
// process: the parent never dlopens the plugin, so neither its constructors
// nor its forward calls can crash, hang or scribble over attncheck. A child
// process is isolation from faults, not a sandbox: the plugin runs as the
// same user, with the same files and network (docs/isolation.md).
//
// Per call, the tensors travel through a shared memory region laid out as in
// call/call_layout.h (poisoned out between guard zones); a crash becomes
// CallStatus::crash ("killed by SIGSEGV (Segmentation fault)"), a call past
// its time limits (time_limits.h) CallStatus::timeout, and the child is restarted for the next
// call. A backward problem (a plugin whose v2 `backward` is not NULL declares
// kBackwardFeature) is the forward call, then the backward call on the same
// region, each within the time limit; a fault in backward says "during
// backward". A restart that fails (the plugin crashes or hangs while loading
// again) is a process fault too (crash, or timeout for a hang), and it is not tried
// again: every later call answers at once, as unsupported with the reason
// ("not called: the plugin could not be restarted ..."), so a plugin that
// cannot be restarted costs one load timeout, not one per call, and the laws
// it could not serve are insufficient (with that reason) rather than failed.
// Restarts together are bounded too (PluginOptions::restart_budget_ms). The
// plugin's texts (name, err) are escaped (printable_text.h); every process it starts ends with its
// host (supervisor.h). One Implementation is not meant to be called from
// several threads at once.
//
// Example usage:
//   std::string error;
//   auto impl = load_plugin("build/plugins/libexample_attention.so", {}, error);
//   if (!impl) { std::cerr << error << "\n"; return 2; }
//   Outcome o = impl->run(problem);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "impls/implementation.h"
#include "host/time_limits.h"

namespace attncheck {


// Half the machine's physical memory: well under what would make it swap or
// wake the OOM killer, far above what attention on checked shapes needs.
uint64_t default_memory_limit_bytes();

struct PluginOptions {
  // CPU time of the plugin's processes (time_limits.h): per call (forward;
  // backward on its own), and loading (and every restart after a fault).
  int timeout_ms = kDefaultTimeoutMs;
  int load_timeout_ms = kDefaultLoadTimeoutMs;
  // Wall-clock time, for a plugin that blocks or sleeps; 0: derived from the
  // CPU limits (default_wall_timeout_ms, default_load_wall_timeout_ms).
  int wall_timeout_ms = 0;
  int load_wall_timeout_ms = 0;
  // Wall-clock time all restarts after faults may take together: a plugin
  // that loads slowly and crashes often would otherwise cost one load per
  // crash, without end. Past it, the plugin is not called again: every later
  // call answers "not called: ..." with the reason (laws without enough judged
  // cases are then insufficient).
  int restart_budget_ms = kDefaultRestartBudgetMs;
  // Memory the plugin's processes added (the host beyond what it had when
  // forked, and every process it started); past it they are stopped and the
  // call is a crash ("exceeded the memory limit"). 0: no limit.
  uint64_t memory_limit_bytes = default_memory_limit_bytes();
  // Variables set in the plugin's process before it is loaded (and on every
  // restart): how the CLI's --python tells the Python bridge which function to
  // load (ATTNCHECK_PYTHON_TARGET), one value per implementation.
  std::vector<std::pair<std::string, std::string>> environment;
  // The implementation's source() in reports; empty: "plugin:<path>".
  std::string source;
};

// Loads the plugin at `path` for isolated execution in a child process. On failure returns nullptr and sets `error`
// to a message naming the file and the cause (missing file, not a shared library / wrong architecture, no
// attncheck_plugin_v3/_v2/_v1 symbol, NULL result, abi_version mismatch, a v3 declaration the spec refuses).
// The returned Implementation's source() is "plugin:<path>", name() is the plugin's attncheck_impl.name.
std::unique_ptr<Implementation> load_plugin(const std::string& path, const PluginOptions& options, std::string& error);

// One more instance of a plugin that load_plugin has loaded, with its own host
// process: one per worker of `check --jobs N` (an instance serves one caller
// at a time). When the plugin does not load this time (one that cannot be
// loaded twice) the instance is returned all the same and answers as after a
// failed restart: its first call the fault (crash, or timeout for a hang),
// every later call "unsupported" with the reason, so the process laws report
// it and the run goes on. nullptr (and `error`) only when the file is no longer
// there or no shared region can be made.
std::unique_ptr<Implementation> load_plugin_again(const std::string& path, const PluginOptions& options,
                                                  std::string& error);

}  // namespace attncheck
