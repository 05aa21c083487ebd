// The same attention function behind the C plugin ABI, for
// `attncheck check --plugin` (attncheck_add_test in CMakeLists.txt): the one
// exported symbol returns a static attncheck_impl whose forward calls it.
#include "attention.hpp"

// The installed package ships every ABI version's header; plugin_v3.h includes
// plugin_v2.h and plugin.h beside it, so this line fails to compile when one is missing.
#include <attncheck/plugin_v3.h>
static_assert(ATTNCHECK_ABI_VERSION_3 == 3u && sizeof(attncheck_call_v3) > sizeof(attncheck_call_v2));

namespace {
int forward(const attncheck_call* c, char* err, size_t err_len) {
  ScaledDotProductAttention attention;  // per call: the child process may call from any state
  return attention(c, err, err_len);
}
}  // namespace

extern "C" __attribute__((visibility("default"))) const attncheck_impl* attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "scaled_dot_product", forward};
  return &impl;
}
