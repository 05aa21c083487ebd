// libattncheck_python.so: a Python function behind the pinned plugin ABI,
// version 3 (attncheck/plugin_v3.h), 2 and 1, so that attncheck checks
// attention written in NumPy or PyTorch without a C plugin of its own.
//
// The function is named by ATTNCHECK_PYTHON_TARGET=MODULE_OR_FILE:FUNCTION (a
// path ending in .py is loaded as a file, anything else imported as a module);
// `attncheck check --python TARGET` sets it for the plugin's process. The
// interpreter is the one the bridge was built against (interpreter.h), started
// when the host calls attncheck_plugin_v3(); the host's isolation is unchanged,
// so a crash inside an extension module is a no_crash failure of the function.
//
// The calling convention (pinned in docs/python.md; call_arrays.h, returned_arrays.h):
//   fn(q, k, v, *, mask=None, causal="none", scale=None, **features) -> out
// Declared features: MASK, CAUSAL and STRIDES always (NumPy arrays carry their
// strides), the rest from fn.attncheck_features (version 3's "packed" and "paged" among them:
// cu_seqlens_q/k, total_q/k as keywords, packed q, k, v as [total, heads, dim];
// block_table, page_size, num_pages, max_pages_per_seq, with paged k and v as
// the pool [num_pages, kv_heads, page_size, dim]);
// promises from fn.attncheck_promises. With fn.attncheck_tensors = "torch" the
// arrays arrive as torch.Tensors over the same memory.
//
// Answers: ATTNCHECK_OK when out (and lse) were written; ATTNCHECK_UNSUPPORTED
// when the function raises NotImplementedError (its way to decline a dtype or a
// shape); 2 for any other exception (its traceback in err) or a return value of
// the wrong type or shape (err says what was expected and what came back).
// Gradients: when the function carries fn.attncheck_backward, the v2 interface
// declares a backward that calls it (call_arrays.h) and writes (dq, dk, dv) back
// (returned_arrays.h), answering as the forward does.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "attncheck/plugin.h"
#include "attncheck/plugin_v2.h"
#include "attncheck/plugin_v3.h"
#include "common/v1_as_v2.h"
#include "call_arrays.h"
#include "interpreter.h"
#include "returned_arrays.h"

namespace {

using namespace pybridge;

constexpr uint32_t kAlwaysDeclared = ATTNCHECK_FEATURE_MASK | ATTNCHECK_FEATURE_CAUSAL | ATTNCHECK_FEATURE_STRIDES;

Target g_target;
std::string g_load_error;  // why attncheck_plugin_v3() (or _v2, _v1) returned NULL

void set_error(char* err, size_t err_len, const std::string& message) {
  if (err_len) std::snprintf(err, err_len, "%s", message.c_str());
}

// Loads the target once per process; false with g_load_error set.
bool loaded() {
  static const bool ok = [] {
    const char* target = std::getenv("ATTNCHECK_PYTHON_TARGET");
    if (!target || !*target) {
      g_load_error =
          "ATTNCHECK_PYTHON_TARGET is not set: name the function as MODULE_OR_FILE:FUNCTION "
          "(attncheck check --python examples/python/numpy_attention.py:attention sets it)";
      return false;
    }
    return start(target, g_target, g_load_error);
  }();
  return ok;
}

// Calls `fn` on the arguments (as torch tensors when the function takes them) and
// hands its result to `write`. ATTNCHECK_UNSUPPORTED for NotImplementedError, 2
// for any other exception or a result `write` refuses (err says why).
template <class Write>
int call_and_write(PyObject* fn, CallArguments& a, char* err, size_t err_len, Write write) {
  const int limit = static_cast<int>(err_len > 1 ? err_len - 1 : 0);
  if (g_target.takes_torch) {
    Ref pair(PyObject_CallMethod(g_target.runtime, "to_torch", "OO", a.args.get(), a.kwargs.get()));
    if (!pair) {
      set_error(err, err_len, "the bridge could not make torch tensors: " + take_exception_text(g_target, limit));
      return 2;
    }
    // (args, kwargs): the tuple lends its items; the tensors keep the arrays alive.
    a.args = Ref(Py_NewRef(PyTuple_GET_ITEM(pair.get(), 0)));
    a.kwargs = Ref(Py_NewRef(PyTuple_GET_ITEM(pair.get(), 1)));
  }
  // Through the runtime's call(): the function's warnings are counted for the report, not printed.
  Ref result(PyObject_CallMethod(g_target.runtime, "call", "OOO", fn, a.args.get(), a.kwargs.get()));
  if (!result) {
    const bool declined = PyErr_ExceptionMatches(PyExc_NotImplementedError);
    set_error(err, err_len, take_exception_text(g_target, limit));
    return declined ? ATTNCHECK_UNSUPPORTED : 2;
  }
  std::string error;
  const int rc = write(result.get(), error);
  PyErr_Clear();
  if (rc != ATTNCHECK_OK) set_error(err, err_len, error);
  return rc;
}

std::string arguments_failed(size_t err_len) {
  const int limit = static_cast<int>(err_len > 1 ? err_len - 1 : 0);
  return "the bridge could not build the arguments: " + take_exception_text(g_target, limit);
}

int forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  const attncheck_call_v3& c = *call;
  CallArguments a;
  if (!call_arguments(c, g_target.features, a)) {
    set_error(err, err_len, arguments_failed(err_len));
    return 2;
  }
  return call_and_write(g_target.fn, a, err, err_len,
                        [&](PyObject* result, std::string& error) { return write_result(g_target, c, result, error); });
}

// fn.attncheck_backward(q, k, v, out, dout, **keywords) -> (dq, dk, dv).
int backward_v3(const attncheck_call_v3* call, const attncheck_grad* grad, char* err, size_t err_len) {
  const attncheck_call_v3& c = *call;
  const attncheck_grad& g = *grad;
  // The gradients of packed calls are not bridged yet (nor sent by this
  // attncheck): declined, never computed as if padded (docs/python.md).
  if (c.cu_seqlens_q || c.cu_seqlens_k) {
    set_error(err, err_len, "the Python bridge does not pass packed backward calls yet (docs/python.md)");
    return ATTNCHECK_UNSUPPORTED;
  }
  CallArguments a;
  if (!backward_arguments(c, g, g_target.features, a)) {
    set_error(err, err_len, arguments_failed(err_len));
    return 2;
  }
  return call_and_write(g_target.backward, a, err, err_len, [&](PyObject* result, std::string& error) {
    return write_gradients(g_target, c.v2, g, result, error);
  });
}

// A v2 call is a v3 call with every added field neutral (plugin_v3.h).
attncheck_call_v3 as_v3(const attncheck_call_v2& c) {
  attncheck_call_v3 c3{};
  c3.v2 = c;
  return c3;
}

int forward_v2(const attncheck_call_v2* call, char* err, size_t err_len) {
  const attncheck_call_v3 c3 = as_v3(*call);
  return forward_v3(&c3, err, err_len);
}

int backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t err_len) {
  const attncheck_call_v3 c3 = as_v3(*call);
  return backward_v3(&c3, grad, err, err_len);
}

// A v1 call is a dense v2 call with every other field neutral.
int forward_v1(const attncheck_call* c1, char* err, size_t err_len) {
  const attncheck_call_v2 c = attncheck_plugins::v1_as_v2(*c1);
  return forward_v2(&c, err, err_len);
}

attncheck_impl g_impl_v1;
attncheck_impl_v2 g_impl_v2;
attncheck_impl_v3 g_impl_v3;

}  // namespace

// Version 3, what the checker uses: the function's features of both versions
// and its promises (bridge_runtime.py refuses names it does not know, and
// deterministic_backward without a backward).
extern "C" __attribute__((visibility("default"))) const attncheck_impl_v3* attncheck_plugin_v3(void) {
  if (!loaded()) return nullptr;
  g_impl_v3 = {ATTNCHECK_ABI_VERSION_3, kAlwaysDeclared | g_target.features, g_target.kv_formats, 0, g_target.promises,
               g_target.name.c_str(), forward_v3, g_target.backward ? backward_v3 : nullptr};
  return &g_impl_v3;
}

// Version 2: the same function, its version-2 features only (a v2 host knows no more).
extern "C" __attribute__((visibility("default"))) const attncheck_impl_v2* attncheck_plugin_v2(void) {
  if (!loaded()) return nullptr;
  // A backward only when the function provides one (fn.attncheck_backward).
  constexpr unsigned kV2Bits = (1u << 11) - 1;
  g_impl_v2 = {ATTNCHECK_ABI_VERSION_2, (kAlwaysDeclared | g_target.features) & kV2Bits, g_target.name.c_str(),
               forward_v2, g_target.backward ? backward_v2 : nullptr};
  return &g_impl_v2;
}

// Version 1: the same function through a dense call (the checker prefers v3).
extern "C" __attribute__((visibility("default"))) const attncheck_impl* attncheck_plugin_v1(void) {
  if (!loaded()) return nullptr;
  g_impl_v1 = {ATTNCHECK_ABI_VERSION, g_target.name.c_str(), forward_v1};
  return &g_impl_v1;
}

// Why attncheck_plugin_v3() (or _v2, _v1) returned NULL: read by attncheck's host
// (src/host/host_child.cpp) for the message of the refused load.
extern "C" __attribute__((visibility("default"))) const char* attncheck_plugin_load_error(void) {
  return g_load_error.c_str();
}
