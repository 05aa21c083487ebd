// Tensor values from the families of GenOptions::families (gen/gen_options.h):
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
#include "gen/choice_source.h"

namespace attncheck::gen {

// One tensor of n elements whose rows are `row` long (head_dim or value_dim),
// every value exactly representable in t. One family is chosen among
// `families` (ValueFamily bits) for the whole tensor; `head_dim` sizes the
// huge-logit family (logits 100..10000 apart after the default scale). With
// kFiniteOnly among `families`, ±inf and NaN fold to ±max (fold_to_finite).
template <class C>
std::vector<double> draw_tensor(C& r, DType t, int64_t n, unsigned families, int64_t head_dim, int64_t row);
extern template std::vector<double> draw_tensor(RandomChoices&, DType, int64_t, unsigned, int64_t, int64_t);
extern template std::vector<double> draw_tensor(ByteChoices&, DType, int64_t, unsigned, int64_t, int64_t);

// One element of kSpecials (an edge value, a small k/8, or a raw pattern) and
// one raw bit pattern of t, decoded (kRawBits): the fuzz targets' palette,
// also for the scale, soft-cap, bias, slopes and sinks they draw.
template <class C>
double special_value(C& r, DType t);
template <class C>
double raw_value(C& r, DType t);
extern template double special_value(RandomChoices&, DType);
extern template double special_value(ByteChoices&, DType);
extern template double raw_value(RandomChoices&, DType);
extern template double raw_value(ByteChoices&, DType);

// x, or ±max(t) for ±inf and +max(t) for NaN.
double fold_to_finite(DType t, double x);

}  // namespace attncheck::gen
