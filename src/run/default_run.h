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

#include <vector>

#include "run/target.h"

namespace attncheck {

// Every built-in, references first, in builtins() order: named, with its
// expectation, its laws and a new instance per law (`open`); not yet loaded
// (`loaded` is the caller's, as are `reproduce` and the probes).
std::vector<Target> default_targets();

}  // namespace attncheck
