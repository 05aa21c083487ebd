// The embedded default of `attncheck check` (no --plugin, no --impl): every
// built-in, each with what it must show. The references (reference, naive,
// online) must pass every law that applies to them; every member of the bug
// zoo must fail at least one law (a suite that passes the zoo tests nothing).
// The run exits 0 exactly when all of that held.
#pragma once

#include <string>
#include <vector>

#include "report/run_report.h"

namespace attncheck {

struct DefaultTarget {
  std::string name;  // a built-in (impls/builtins.h)
  Expectation expectation;
};

// Every built-in, references first, in builtins() order.
std::vector<DefaultTarget> default_targets();

}  // namespace attncheck
