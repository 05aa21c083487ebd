// Diagnosis: when a law fails, say what the fault looks like by matching the
// implementation's output on the failing case against fault models (attention
// with one known thing wrong, computed in high precision).
//
// Example usage:
//   const std::string d = diagnose(impl, *report.counterexample);
//   if (!d.empty()) std::printf("%s\n", d.c_str());  // "behaves like: attention without the 1/sqrt(d) scale"
//                                                     // or "measured: weights sum to 0.73 (...)"
#pragma once

#include <string>

#include "impls/implementation.h"
#include "problem/problem.h"

namespace attncheck {

// Runs impl on `failing` and, when its output there is correct (laws often
// judge a transformed problem), on a few problems derived from it (default
// scale, a causal rule, a mask, V = identity, a larger head_dim, larger
// logits, more heads and batches; for ABI v2 features also the transformed
// calls the v2 laws make: strided views, a shifted bias, a sink as a key, NaN
// padding). A model matches when the output (and the lse, where the problem
// requests one) agrees with the model within the model's bound on every
// element the model judges, those include every element where the output
// breaks the correct oracle's bound (or the model leaves it free: a fault
// reading huge garbage leaves the representable domain), and the correct
// oracle does not match. A model that cannot show on
// a problem predicts correct attention there: a wrong output on the failing
// case or any derived problem it does not apply to rules it out, so a model
// is named only when it explains the failing case itself. Returns
// "behaves like: <model>" (plus the derived problem it was seen on); when no
// model matches, what the implementation's outputs measure
// ("measured: behaves like 0.693 times the requested scale; ...", see
// diagnosis/measurements.h), or "" when nothing informative was seen.
// A correct implementation never gets a diagnosis.
std::string diagnose(Implementation& impl, const Problem& failing);

}  // namespace attncheck
