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
//
// A zoo member whose row pins an opt-in law (one the default catalogue leaves
// out, e.g. nan_propagates: a fault that shows only with NaN inputs) also runs
// that law, for it alone, when the run is the default catalogue's: so the
// embedded default catches it, and every other built-in's report is what the
// catalogue alone gives.
#pragma once

#include <vector>

#include "impls/builtins.h"
#include "run/target.h"

namespace attncheck {

// Every built-in, references first, in builtins() order: named, with its
// expectation, its laws and a new instance per law (`open`); not yet loaded
// (`loaded` is the caller's, as are `reproduce` and the probes).
// `default_catalogue`: the run's laws are the default catalogue (no --law),
// so each zoo member's pinned opt-in laws are its extra_laws; false: none.
std::vector<Target> default_targets(bool default_catalogue = true);

// The laws `member`'s row pins that the default catalogue leaves out, in its row's order.
std::vector<const Law*> pinned_opt_in_laws(const BuiltinInfo& member);

}  // namespace attncheck
