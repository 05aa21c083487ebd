// Third-party implementations, loaded from a shared library exporting the
// pinned C ABI (include/attncheck/plugin.h) and run in an isolated child
// process: the parent never dlopens the plugin, so neither its constructors
// nor its forward calls can crash, hang or scribble over attncheck.
//
// Per call, the tensors travel through a shared memory region laid out as in
// problem/call_layout.h (poisoned out between guard zones); a crash becomes
// CallStatus::crash ("killed by SIGSEGV (Segmentation fault)"), a call past
// the time limit CallStatus::timeout, and the child is restarted for the next
// call. One Implementation is not meant to be called from several threads at once.
//
// Example usage:
//   std::string error;
//   auto impl = load_plugin("build/plugins/libexample_attention.so", {}, error);
//   if (!impl) { std::cerr << error << "\n"; return 2; }
//   Outcome o = impl->run(problem);
#pragma once

#include <memory>
#include <string>

#include "impls/implementation.h"

namespace attncheck {

struct PluginOptions {
  int timeout_ms = 2000;  // per forward call; loading gets at least 5 s
};

// Loads the plugin at `path` for isolated execution in a child process. On failure returns nullptr and sets `error`
// to a message naming the file and the cause (missing file, not a shared library / wrong architecture, no
// attncheck_plugin_v1 symbol, NULL result, abi_version mismatch).
// The returned Implementation's source() is "plugin:<path>", name() is the plugin's attncheck_impl.name.
std::unique_ptr<Implementation> load_plugin(const std::string& path, const PluginOptions& options, std::string& error);

}  // namespace attncheck
