// Eight doubles as one value (GCC/clang vector extensions): the oracle's
// kernels are written on it so that every target_clones clone (simd_clones.h)
// gets the same, explicit vectorisation: one zmm register on AVX-512, two ymm
// on AVX2, four xmm on the baseline. Element-wise IEEE arithmetic, nothing
// reassociated.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

// Passing these by value would change the ABI between ISAs (-Wpsabi); every
// helper here is always inlined, so no such call exists, and the files that
// include this one are compiled with -Wno-psabi (src/CMakeLists.txt).

namespace attncheck::oracle_detail {

typedef double v8d __attribute__((vector_size(64)));
typedef int64_t v8i __attribute__((vector_size(64)));

__attribute__((always_inline)) inline v8d load8(const double* p) {
  v8d v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
__attribute__((always_inline)) inline void store8(double* p, v8d v) { std::memcpy(p, &v, sizeof v); }
// A shuffle of lane 0: one broadcast, often folded into the FMA's memory
// operand; v8d{} + x would keep a scalar addition (-0 + 0 is +0) before it.
__attribute__((always_inline)) inline v8d splat8(double x) {
  const v8d v = {x};
  return __builtin_shufflevector(v, v, 0, 0, 0, 0, 0, 0, 0, 0);
}
__attribute__((always_inline)) inline v8d abs8(v8d v) {
  v8i bits;
  std::memcpy(&bits, &v, sizeof v);
  bits &= INT64_MAX;  // clears the sign bits
  std::memcpy(&v, &bits, sizeof v);
  return v;
}
// std::fma lane by lane: one vfmadd where the clone has FMA (GCC vectorises
// the loop), a correctly rounded library fma elsewhere; the same value either way.
__attribute__((always_inline)) inline v8d fma8(v8d a, v8d b, v8d c) {
  v8d r;
  for (int l = 0; l < 8; ++l) r[l] = std::fma(a[l], b[l], c[l]);
  return r;
}
// max and min as std::max / std::min: the first argument when either is NaN.
__attribute__((always_inline)) inline v8d max8(v8d a, v8d b) { return a < b ? b : a; }
__attribute__((always_inline)) inline v8d min8(v8d a, v8d b) { return b < a ? b : a; }

}  // namespace attncheck::oracle_detail
