// The warnings a Python function raised while it was checked (a NumPy
// RuntimeWarning, a DeprecationWarning): the bridge (plugins/python,
// bridge_runtime.py's call()) records them instead of letting them reach the
// terminal, counts the calls that raised each, and writes the counts to
// $ATTNCHECK_PYTHON_WARNINGS_DIR/warnings.<pid>, one "calls<TAB>text" line per
// warning, from every process that runs the function (the probes', each
// worker's, a restarted one). After the run the counts are summed into notes
// for the report: "the function warned: RuntimeWarning: overflow encountered
// in exp (37 calls)".
//
// Example usage:
//   PythonWarnings w;                      // makes the folder
//   o.environment.emplace_back(kPythonWarningsVariable, w.folder());
//   ... after the run:
//   for (const std::string& note : w.notes()) r.notes.push_back(note);
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace attncheck {

inline constexpr const char* kPythonWarningsVariable = "ATTNCHECK_PYTHON_WARNINGS_DIR";

class PythonWarnings {
 public:
  PythonWarnings();   // a new folder under $TMPDIR (or /tmp); folder() is "" when none could be made
  ~PythonWarnings();  // removes it
  PythonWarnings(const PythonWarnings&) = delete;
  PythonWarnings& operator=(const PythonWarnings&) = delete;

  const std::string& folder() const { return folder_; }
  // The warnings written so far, most calls first: "the function warned: TEXT (N call(s))".
  std::vector<std::string> notes() const;

 private:
  std::string folder_;
};

}  // namespace attncheck
