// What the problem generators may draw: shape ranges, features and value
// families. Plain data, free of any test framework, so that laws (which narrow
// it through Law::tailor), the CLI and the fuzzers can all speak it.
#pragma once

#include <cstdint>
#include <vector>

#include "problem/dtype.h"

namespace attncheck {

// Families of tensor values. A problem draws one family per tensor.
enum ValueFamily : unsigned {
  kGaussian = 1u << 0,     // unit-variance normal, rounded to the dtype
  kSmallInts = 1u << 1,    // -3..3: ties and exact sums
  kWide = 1u << 2,         // log-uniform magnitudes over the dtype's whole range
  kEdge = 1u << 3,         // ±0, subnormals, smallest/largest normals, ±1, mixed with Gaussians
  kHugeLogits = 1u << 4,   // Gaussians scaled so logits are hundreds to thousands apart
  kAllFamilies = 0x1Fu,
};

struct GenOptions {
  std::vector<DType> dtypes{DType::f32, DType::f64};
  int64_t min_batch = 1, max_batch = 3, min_heads = 1, max_heads = 3;
  // Lengths reach past the tile sizes implementations use (powers of two and
  // one past them, up to 129 in long runs); the RapidCheck size scales them.
  int64_t min_q_len = 1, max_q_len = 72;
  int64_t min_kv_len = 1, max_kv_len = 72;
  int64_t min_head_dim = 1, max_head_dim = 72;
  int64_t max_value_dim = 72;
  bool same_dims = false;       // value_dim == head_dim always
  bool causal = true;           // may draw a causal rule
  bool mask = true;             // may draw a mask
  bool explicit_scale = true;   // may draw an explicit scale (else always the default)
  unsigned families = kAllFamilies;
  // Grows lengths and dims by this factor in long runs (ATTNCHECK_SIZE=long).
  double size_factor = 1.0;
};

}  // namespace attncheck
