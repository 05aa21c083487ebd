// A Problem is one forward call: the currency every driver trades in.
// Generators make it, fuzzers decode it, case files store it, implementations
// (built-in or plugin) receive it through the ABI.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "problem/dtype.h"
#include "problem/visibility.h"

namespace attncheck {

enum class Causal { none = ATTNCHECK_CAUSAL_NONE, top_left = ATTNCHECK_CAUSAL_TOP_LEFT,
                    bottom_right = ATTNCHECK_CAUSAL_BOTTOM_RIGHT };

std::string_view causal_name(Causal c);  // "none", "top_left", "bottom_right"

struct Shape {
  int64_t batch = 1, heads = 1, q_len = 1, kv_len = 1, head_dim = 1, value_dim = 1;

  int64_t q_size() const { return batch * heads * q_len * head_dim; }
  int64_t k_size() const { return batch * heads * kv_len * head_dim; }
  int64_t v_size() const { return batch * heads * kv_len * value_dim; }
  int64_t mask_size() const { return batch * heads * q_len * kv_len; }
  int64_t out_size() const { return batch * heads * q_len * value_dim; }
  bool operator==(const Shape&) const = default;
};

struct Problem {
  DType dtype = DType::f32;
  Shape shape;
  Causal causal = Causal::none;
  // NaN asks the implementation for its default, which must be 1/sqrt(head_dim).
  double scale = std::numeric_limits<double>::quiet_NaN();
  // Row-major, values exactly representable in `dtype`:
  //   q [batch][heads][q_len][head_dim], k [batch][heads][kv_len][head_dim],
  //   v [batch][heads][kv_len][value_dim].
  std::vector<double> q, k, v;
  // [batch][heads][q_len][kv_len], nonzero = may attend; empty = no mask.
  std::vector<uint8_t> mask;

  bool has_mask() const { return !mask.empty(); }
  // The scale the exact computation uses (the default resolved).
  double effective_scale() const {
    return std::isnan(scale) ? 1.0 / std::sqrt(static_cast<double>(shape.head_dim)) : scale;
  }

  // Flat offsets; `bh` is b * heads + h.
  int64_t q_at(int64_t bh, int64_t i, int64_t d) const { return (bh * shape.q_len + i) * shape.head_dim + d; }
  int64_t k_at(int64_t bh, int64_t j, int64_t d) const { return (bh * shape.kv_len + j) * shape.head_dim + d; }
  int64_t v_at(int64_t bh, int64_t j, int64_t c) const { return (bh * shape.kv_len + j) * shape.value_dim + c; }
  int64_t out_at(int64_t bh, int64_t i, int64_t c) const { return (bh * shape.q_len + i) * shape.value_dim + c; }
  int64_t mask_at(int64_t bh, int64_t i, int64_t j) const { return (bh * shape.q_len + i) * shape.kv_len + j; }

  // Number of leading keys the causal rule leaves to row i (problem/visibility.h);
  // may be <= 0 or >= kv_len.
  int64_t causal_key_end(int64_t i) const {
    return attncheck::causal_key_end(static_cast<int>(causal), shape.q_len, shape.kv_len, i);
  }
  // The causal rule alone allows query i to see key j.
  bool causal_allows(int64_t i, int64_t j) const { return j < causal_key_end(i); }
  // The mask alone (no mask: every key).
  bool mask_allows(int64_t bh, int64_t i, int64_t j) const { return mask.empty() || mask[mask_at(bh, i, j)] != 0; }
  // Both the causal rule and the mask allow query i of head bh to see key j.
  bool visible(int64_t bh, int64_t i, int64_t j) const { return causal_allows(i, j) && mask_allows(bh, i, j); }
  // Query i of head bh sees at least one key.
  bool row_sees_any_key(int64_t bh, int64_t i) const;

  // Sizes of q, k, v, mask agree with the shape and every extent is positive.
  // Returns "" when consistent, else what is wrong.
  std::string inconsistency() const;

  // A short human-readable rendering: the header line, then the tensors when small.
  std::string describe(std::size_t max_elements = 64) const;
  // One line: dtype, shape, causal rule, scale, mask.
  std::string header() const;
};

// Builds a zero-filled problem of the given shape (no mask).
Problem make_problem(DType dtype, const Shape& shape, Causal causal = Causal::none,
                     double scale = std::numeric_limits<double>::quiet_NaN());

// Rounds every tensor element to the problem's dtype (after a transformation
// that may have left the representable set).
void round_tensors(Problem& p);

}  // namespace attncheck
