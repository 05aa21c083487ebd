// The embedded default of `attncheck check` (no --plugin, no --impl): every
// built-in, each with what it must show. The references (reference, naive,
// online) must pass every law that applies to them; every member of the bug
// zoo must fail at least one law (a suite that passes the zoo tests nothing).
// The run exits 0 exactly when all of that held.
//
// A zoo member that runs reference's own forward functions (the backward zoo:
// one fault in its backward) is judged on the gradient laws only: its forward
// laws would judge reference's forward again, which reference's row already
// does, and they were a quarter of the whole run's time.
#pragma once

#include <string>
#include <vector>

#include "problem/problem.h"
#include "report/run_report.h"

namespace attncheck {

struct DefaultTarget {
  std::string name;  // a built-in (impls/builtins.h)
  Expectation expectation = Expectation::none;
  // Nonzero: only laws that require one of these features run; the others are
  // skipped with `only_reason`.
  FeatureBits only_laws_requiring = 0;
  std::string only_reason;
};

// Every built-in, references first, in builtins() order.
std::vector<DefaultTarget> default_targets();

}  // namespace attncheck
