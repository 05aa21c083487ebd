// Drawing Problems from a seed or from a fuzzer's bytes, and shrinking them,
// free of any test framework. One generator: every choice it makes is read
// from a source (gen/choice_source.h), the seeded random stream or the bytes.
//
// Shapes first, then tensors sized to them. Every Problem shrinks through
// `shrink_problem` towards the smallest shape and the simplest values (zeros,
// small integers, few mantissa bits: whole tensors, then halves, quarters, ...
// of each, then single elements), so counterexamples come out small. The
// RapidCheck generator built on these lives in driver/problem_gen.h.
//
// Example usage:
//   GenOptions opts;                 // defaults: every family, masks, causal rules
//   opts.dtypes = {DType::f64};
//   const Problem p = sample_problem(opts, /*seed=*/42);
//   const Problem q = problem_from_bytes(opts, data, size);   // a fuzz target
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gen/choice_source.h"
#include "gen/gen_options.h"
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

// The same generator reading its choices from bytes (a fuzzer's input; missing
// bytes read as zero, the simplest choice), at full size: every byte string
// gives a consistent Problem within the options.
Problem problem_from_bytes(const GenOptions& options, const uint8_t* data, std::size_t size);

// The same from a byte source the caller keeps, to ask it afterwards how many
// bytes the problem read and which value families it drew (the seed corpus writer).
Problem draw_problem_from(const GenOptions& options, gen::ByteChoices& choices, int size = 100);

// The work of one forward call of this shape for a plain kernel (a triple
// loop, like the `naive` built-in): batch * heads * q_len * kv_len *
// (head_dim + value_dim + kExpWork) multiply-adds, the logit's dot product, its
// share of P V, and its exp with the softmax's bookkeeping counted as kExpWork
// multiply-adds (measured on naive: 4,096 x 4,096 keys at head_dim = value_dim
// = 1 take about as long as at 12 + 12; docs/shapes.md). Every key is counted,
// masked or not: a plain kernel may compute them all. The profiles cap it
// (GenOptions::max_case_work).
inline constexpr int64_t kExpWork = 24;
int64_t call_work(const Shape& s);

// How simple a value is: 0 for zero, then by mantissa bits and exponent.
// Shrinking only ever moves to a strictly smaller complexity.
int value_complexity(double x);

// Simpler versions of x, most drastic first (0, 1, 1 with its sign, the nearest
// integer, its integer part, fewer mantissa bits, -x for negative x), each
// representable in t and of strictly smaller value_complexity.
std::vector<double> simpler_values(double x, DType t);

}  // namespace attncheck
