// Sixteen floats as one value, beside v8d (simd_v8d.h): the bound's
// non-negative sums on the double path (fast_bound_float.h) run at twice
// double's lanes. One zmm register on AVX-512, two ymm on AVX2, four xmm on the
// baseline; element-wise IEEE arithmetic, nothing reassociated.
#pragma once

#include <cstdint>
#include <cstring>

#include "oracle/simd_v8d.h"

namespace attncheck::oracle_detail {

typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));

__attribute__((always_inline)) inline v16f load16f(const float* p) {
  v16f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
// A shuffle of lane 0: in the target_clones clones GCC 12 makes it one
// broadcast, often folded into the FMA's memory operand; v16f{} + x keeps a
// scalar addition (-0 + 0 is +0), and x - v16f{} or an initializer list of
// 16 x become 16 masked broadcasts.
__attribute__((always_inline)) inline v16f splat16f(float x) {
  const v16f v = {x};
  return __builtin_shufflevector(v, v, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
}
__attribute__((always_inline)) inline v16f abs16f(v16f v) {
  v16i bits;
  std::memcpy(&bits, &v, sizeof v);
  bits &= INT32_MAX;  // clears the sign bits
  std::memcpy(&v, &bits, sizeof v);
  return v;
}
__attribute__((always_inline)) inline v16f max16f(v16f a, v16f b) { return a < b ? b : a; }

// The low (h = 0) or high (h = 1) eight lanes, widened to double (exact).
__attribute__((always_inline)) inline v8d widen8(v16f v, int h) {
  v8f half;
  std::memcpy(&half, reinterpret_cast<const char*>(&v) + 32 * h, sizeof half);
  return __builtin_convertvector(half, v8d);
}

// Eight floats from memory, widened to double (exact).
__attribute__((always_inline)) inline v8d load8f_widened(const float* p) {
  v8f half;
  std::memcpy(&half, p, sizeof half);
  return __builtin_convertvector(half, v8d);
}

// Eight doubles rounded to the nearest floats.
__attribute__((always_inline)) inline v8f narrow8(v8d v) { return __builtin_convertvector(v, v8f); }

}  // namespace attncheck::oracle_detail
