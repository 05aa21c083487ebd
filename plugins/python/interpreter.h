// The embedded interpreter of the Python bridge: started once per plugin
// process, from Debian's libpython (the one the bridge was built against) with
// its own packages, whatever PATH, PYTHONHOME or PYTHONPATH say.
#pragma once

#include <string>

#include "numpy_api.h"

namespace pybridge {

// What the bridge loaded: the user's function and what it declares.
struct Target {
  PyObject* fn = nullptr;        // owned for the life of the process
  PyObject* backward = nullptr;  // fn.attncheck_backward, owned; null when it has none
  PyObject* runtime = nullptr;   // the module _attncheck_bridge (bridge_runtime.py)
  unsigned features = 0;         // ATTNCHECK_FEATURE_* bits (v2's and v3's) from fn.attncheck_features
  unsigned promises = 0;         // ATTNCHECK_PROMISE_* bits from fn.attncheck_promises
  unsigned kv_formats = 0;       // bit (1 << attncheck_kv_format) per name of fn.attncheck_kv_formats
  bool takes_torch = false;      // fn.attncheck_tensors == "torch"
  std::string name;              // the target text, MODULE_OR_FILE:FUNCTION
};

// Starts Python (isolated config: the environment is not read, signal handlers
// are left to the host; PYTHONPATH's entries are appended after the
// interpreter's own paths), imports NumPy and the bridge runtime and loads
// `target_text`. Returns false with the reason in `error` (an import error
// names the module and sys.path).
bool start(const std::string& target_text, Target& target, std::string& error);

// The pending Python exception as one line within `limit` characters (and
// cleared): a LoadError's message, else the exception and its traceback.
std::string take_exception_text(const Target& t, int limit);

// The Python str `s` as UTF-8, whole: a lone surrogate becomes \udc80 (as
// errors="backslashreplace" writes it) instead of losing the whole text, and a
// NUL becomes \x00 instead of ending the C string an err buffer is.
std::string utf8_text(PyObject* s);

// A call into the runtime module: runtime.<name>(*args); new reference or null.
PyObject* call_runtime(const Target& t, const char* name, PyObject* args);

}  // namespace pybridge
