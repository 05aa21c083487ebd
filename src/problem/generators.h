// Drawing Problems from a seed and shrinking them, free of any test framework.
//
// Shapes first, then tensors sized to them. Every Problem shrinks through
// `shrink_problem` towards the smallest shape and the simplest values (zeros,
// small integers, few mantissa bits), so counterexamples come out small. The
// RapidCheck generator built on these lives in driver/problem_gen.h.
//
// Example usage:
//   GenOptions opts;                 // defaults: every family, masks, causal rules
//   opts.dtypes = {DType::f64};
//   const Problem p = sample_problem(opts, /*seed=*/42);
#pragma once

#include <cstdint>
#include <vector>

#include "problem/gen_options.h"
#include "problem/problem.h"

namespace attncheck {

// Candidates that are strictly simpler than `p` (smaller shape, fewer
// features, simpler values), the most drastic first.
// Shapes never shrink below the options' minimums (nor break same_dims), so a
// law's tailored domain holds for every candidate; a backward problem shrinks
// to a forward one only when options.required lacks kBackwardFeature.
std::vector<Problem> shrink_problem(const Problem& p, const GenOptions& options = {});

// Draws one Problem from a 64-bit seed. `size` (0..100) scales shapes from
// tiny to the options' caps, as RapidCheck's size does.
Problem sample_problem(const GenOptions& options, uint64_t seed, int size = 100);

// How simple a value is: 0 for zero, then by mantissa bits and exponent.
// Shrinking only ever moves to a strictly smaller complexity.
int value_complexity(double x);

// Simpler versions of x, most drastic first (0, 1, its integer part, fewer
// mantissa bits, -x for negative x), each representable in t and of strictly
// smaller value_complexity.
std::vector<double> simpler_values(double x, DType t);

}  // namespace attncheck
