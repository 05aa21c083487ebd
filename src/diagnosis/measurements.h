// Measured diagnosis: when no fault model explains a failure, say in numbers
// what the implementation's own outputs show. With V = identity the output is
// the weight matrix P, and P against the exact logits gives the effective
// scale and the weight mass; Gaussian problems of growing kv_len give the
// effective precision and how the error grows; rows of growing logit size
// give a threshold; the failing case varied in dtype, head_dim, causal rule
// and mask gives the axes the failure depends on.
//
// Each finding is reported only when it is informative (the probe it comes
// from is wrong against the oracle, so a correct implementation gets none)
// and consistent (a scale fit with R^2 >= 0.99, a threshold that separates
// every right row from every wrong one, ...). At most kMaxMeasureCalls calls
// of the implementation; a probe it declines (UNSUPPORTED, an error code) is
// skipped, and a crash or hang ends the measuring.
//
// Example usage (diagnose() does this when no model matches):
//   const std::string m = measure(impl, failing);
//   // "measured: behaves like 0.693 times the requested scale"
#pragma once

#include <string>

#include "impls/implementation.h"
#include "problem/problem.h"

namespace attncheck {

inline constexpr int kMaxMeasureCalls = 40;

// "measured: <finding>; <finding>..." or "" when nothing informative was seen.
std::string measure(Implementation& impl, const Problem& failing);

}  // namespace attncheck
