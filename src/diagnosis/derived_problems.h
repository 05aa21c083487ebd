// The problems diagnosis runs an implementation on besides the failing case:
// each changes one thing (default scale, wider head, a causal rule, a mask,
// wider V, larger logits, more rows and keys, more heads and batches; strided
// views and NaN padding where the implementation declares those features) so
// that fault models that coincide on the failing case come apart, and faults
// that a law saw only through a transformed problem show. Every ABI v2
// field of the failing case is carried along (grouped kv heads, broadcast
// masks and biases, lengths, per-head slopes and sinks); a derived problem
// that cannot carry one is left inconsistent and not run.
#pragma once

#include <string>
#include <vector>

#include "problem/problem.h"

namespace attncheck {

struct Derived {
  std::string how;  // "" for the failing case itself; else "with ..." for the report
  Problem p;
};

// The failing case first, then the problems derived from it; `declared`: the
// implementation's ABI v2 features (no derived problem uses one beyond them
// that the failing case does not use).
std::vector<Derived> derived_problems(const Problem& p, FeatureBits declared);

}  // namespace attncheck
