// Tensor values from the families of GenOptions::families (problem/gen_options.h):
// what q, k and v are drawn from, and dout of a backward problem, so that its
// magnitudes are those of v (unit Gaussians, small integers, the dtype's whole
// range, edge values, huge and model-sized logits, outlier channels, ...).
//
// Example usage (inside draw_problem):
//   p.v = gen::draw_tensor(r, p.dtype, s.v_size(), o.families, s.head_dim, s.value_dim);
#pragma once

#include <cstdint>
#include <vector>

#include "problem/dtype.h"
#include "problem/gen_random.h"

namespace attncheck::gen {

// One tensor of n elements whose rows are `row` long (head_dim or value_dim),
// every value exactly representable in t. One family is chosen among
// `families` (ValueFamily bits) for the whole tensor; `head_dim` sizes the
// huge-logit family (logits 100..10000 apart after the default scale).
std::vector<double> draw_tensor(Rng& r, DType t, int64_t n, unsigned families, int64_t head_dim, int64_t row);

}  // namespace attncheck::gen
