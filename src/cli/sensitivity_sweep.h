// The founding symptom measured against head_dim (`attncheck sensitivity`):
// for each head_dim, a fixed set of unit-Gaussian problems (the regime of
// the query_sensitivity law: no mask, no causal rule, default scale), and on
// them the law's own measurement (law_framework/query_response.h): the median over the
// measurable rows of r_impl / r_oracle, and the mean entropy of the
// implementation's attention weights. Exact attention keeps both flat in
// head_dim (its logits have unit variance at every d); a layer that never
// divides by sqrt(d) saturates its softmax: the entropy falls to 0 and the
// output stops following the query.
//
// Deterministic: the problems depend on the seed and head_dim only.
//
// Example usage:
//   SweepPoint p = measure_sensitivity(impl, 256, DType::f64, kSensitivitySeed);
//   if (p.error.empty()) std::printf("%g %g\n", p.sensitivity, p.entropy);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "impls/implementation.h"
#include "problem/dtype.h"

namespace attncheck {

inline constexpr uint64_t kSensitivitySeed = 20261130;
// head_dim 16..1024, a factor of 2 apart: the x axis.
std::vector<int64_t> sensitivity_head_dims();
// Each point: this many problems of q_len rows and kv_len keys (value_dim = kv_len).
inline constexpr int kSensitivityProblems = 32;
inline constexpr int64_t kSensitivityQLen = 8, kSensitivityKvLen = 16;

struct SweepPoint {
  int64_t head_dim = 0;
  double sensitivity = 0;    // median of r_impl / r_oracle over the measurable rows (1: as exact attention)
  double entropy = 0;        // mean entropy (nats) of the implementation's weights over the rows
  double exact_entropy = 0;  // the same for exact attention
  int rows = 0;              // measurable rows behind `sensitivity`
  std::string error;         // non-empty: the implementation could not be measured here (the reason)
};

SweepPoint measure_sensitivity(Implementation& impl, int64_t head_dim, DType dtype, uint64_t seed);

}  // namespace attncheck
