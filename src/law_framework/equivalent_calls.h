// Two calls that must give the same output: the v2 laws that trade a feature
// for its plain equivalent (gqa_equals_repeated_kv, window_equals_mask, ...)
// run both and compare them within each one's oracle bound.
#pragma once

#include "law_framework/law_support.h"

namespace attncheck {

// Runs impl on a and on b (same output shape) and compares the outputs
// elementwise within the sum of their oracle bounds. `name_a` / `name_b` say in
// a failure which call was which. Outputs only, not the lse: lse_matches_oracle
// judges each call's lse against the oracle and draws every feature these laws
// trade, and one rule would not fit them all (a constant added to the bias
// moves the lse by that constant).
Verdict equivalent_calls(Implementation& impl, const Problem& a, const Problem& b, const char* name_a,
                         const char* name_b);

}  // namespace attncheck
