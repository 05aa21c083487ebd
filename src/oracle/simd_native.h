// The oracle's kernels on native vectors: one register of the build that runs
// them (parallel/vector_isa.h), so nothing is ever split or kept in memory.
//   Simd<64>  AVX-512: d = 8 doubles, f = 16 floats (one zmm each)
//   Simd<32>  AVX2:    d = 4 doubles, f = 8 floats  (one ymm each)
//   Simd<16>  SSE2:    d = 2 doubles, f = 4 floats  (one xmm each)
// A kernel is a template on S = Simd<kBytes>; each build instantiates it with
// its own width (SimdOf, run_in_vector_build). GCC 12 kept 64-byte vectors in
// memory in an AVX2 build (every operation a load and a store), which made
// the oracle 20x slower on a machine without AVX-512.
//
// f has twice d's lanes: a float vector of kF lanes widens into two d
// (widen(v, 0), widen(v, 1)). Every operation is element-wise IEEE
// arithmetic; nothing is reassociated, so a kernel whose lanes are
// independent gives the same bits in every build that has the same FMA use.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "parallel/vector_isa.h"

// Passing these by value would change the ABI between ISAs (-Wpsabi); every
// helper here is always inlined, so no such call exists, and the files that
// include this one are compiled with -Wno-psabi (src/CMakeLists.txt).

namespace attncheck::oracle_detail {

#define ATTNCHECK_INLINE __attribute__((always_inline)) inline

typedef double v8d __attribute__((vector_size(64)));
typedef double v4d __attribute__((vector_size(32)));
typedef double v2d __attribute__((vector_size(16)));
typedef float v16f __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef float v2f __attribute__((vector_size(8)));

// What does not depend on the width: D doubles, F floats (twice D's lanes),
// HF floats (as many lanes as D). Self (the Simd<N> below) gives the
// conversions between HF and D, to_double and to_float.
template <class Self, class D, class F, class HF>
struct SimdOps {
  typedef D d;
  typedef F f;
  typedef HF hf;
  static constexpr int kD = sizeof(D) / sizeof(double);
  static constexpr int kF = 2 * kD;
  typedef int64_t di __attribute__((vector_size(sizeof(D))));
  typedef int32_t fi __attribute__((vector_size(sizeof(F))));

  static ATTNCHECK_INLINE D load(const double* p) {
    D v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static ATTNCHECK_INLINE F loadf(const float* p) {
    F v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static ATTNCHECK_INLINE void store(double* p, D v) { std::memcpy(p, &v, sizeof v); }
  static ATTNCHECK_INLINE void storef(float* p, F v) { std::memcpy(p, &v, sizeof v); }
  // kD floats from memory, widened to double (exact).
  static ATTNCHECK_INLINE D load_widened(const float* p) {
    HF h;
    std::memcpy(&h, p, sizeof h);
    return Self::to_double(h);
  }
  // The low (h = 0) or high (h = 1) kD lanes of v, widened to double (exact).
  static ATTNCHECK_INLINE D widen(F v, int h) {
    HF half;
    std::memcpy(&half, reinterpret_cast<const char*>(&v) + sizeof(HF) * h, sizeof half);
    return Self::to_double(half);
  }
  // kD doubles rounded to the nearest floats, stored.
  static ATTNCHECK_INLINE void store_narrowed(float* p, D v) {
    const HF h = Self::to_float(v);
    std::memcpy(p, &h, sizeof h);
  }
  static ATTNCHECK_INLINE D abs(D v) {
    di bits;
    std::memcpy(&bits, &v, sizeof v);
    bits &= INT64_MAX;  // clears the sign bits
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  static ATTNCHECK_INLINE F absf(F v) {
    fi bits;
    std::memcpy(&bits, &v, sizeof v);
    bits &= INT32_MAX;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  // std::fma lane by lane: one vfmadd where the build has FMA (GCC vectorises
  // the loop), a correctly rounded library fma elsewhere; the same value either way.
  static ATTNCHECK_INLINE D fma(D a, D b, D c) {
    D r;
    for (int l = 0; l < kD; ++l) r[l] = std::fma(a[l], b[l], c[l]);
    return r;
  }
  // max and min as std::max / std::min: the first argument when either is NaN.
  static ATTNCHECK_INLINE D max(D a, D b) { return a < b ? b : a; }
  static ATTNCHECK_INLINE D min(D a, D b) { return b < a ? b : a; }
  static ATTNCHECK_INLINE F maxf(F a, F b) { return a < b ? b : a; }
};

template <int kBytes>
struct Simd;

// to_double / to_float: GCC 12 lowers __builtin_convertvector between
// floats and doubles of the same lane count in half-width pieces (two
// vcvtps2pd on xmm for a v4f, with a trip through the stack), so the AVX-512
// and AVX2 builds name the one instruction; checked for its ISA where it is
// expanded, after inlining into that build, the one place its Simd is used.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && ATTNCHECK_HAS_ISA_BUILDS
#define ATTNCHECK_GCC_X86_BUILTINS 1
#else
#define ATTNCHECK_GCC_X86_BUILTINS 0
#endif

// splat: a shuffle of lane 0, one broadcast (often folded into the FMA's
// memory operand). v{} + x would keep a scalar addition (-0 + 0 is +0), and
// an initializer list of x lane by lane becomes masked broadcasts. Written
// per width: GCC 12 refuses __builtin_shufflevector on a dependent type.
template <>
struct Simd<64> : SimdOps<Simd<64>, v8d, v16f, v8f> {
#if ATTNCHECK_GCC_X86_BUILTINS  // all lanes (mask 0xff), the current rounding mode (4)
  static ATTNCHECK_INLINE v8d to_double(v8f h) { return __builtin_ia32_cvtps2pd512_mask(h, v8d{}, 0xff, 4); }
  static ATTNCHECK_INLINE v8f to_float(v8d v) { return __builtin_ia32_cvtpd2ps512_mask(v, v8f{}, 0xff, 4); }
#else
  static ATTNCHECK_INLINE v8d to_double(v8f h) { return __builtin_convertvector(h, v8d); }
  static ATTNCHECK_INLINE v8f to_float(v8d v) { return __builtin_convertvector(v, v8f); }
#endif
  static ATTNCHECK_INLINE d splat(double x) {
    const d v = {x};
    return __builtin_shufflevector(v, v, 0, 0, 0, 0, 0, 0, 0, 0);
  }
  static ATTNCHECK_INLINE f splatf(float x) {
    const f v = {x};
    return __builtin_shufflevector(v, v, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  }
};
template <>
struct Simd<32> : SimdOps<Simd<32>, v4d, v8f, v4f> {
#if ATTNCHECK_GCC_X86_BUILTINS
  static ATTNCHECK_INLINE v4d to_double(v4f h) { return __builtin_ia32_cvtps2pd256(h); }
  static ATTNCHECK_INLINE v4f to_float(v4d v) { return __builtin_ia32_cvtpd2ps256(v); }
#else
  static ATTNCHECK_INLINE v4d to_double(v4f h) { return __builtin_convertvector(h, v4d); }
  static ATTNCHECK_INLINE v4f to_float(v4d v) { return __builtin_convertvector(v, v4f); }
#endif
#if ATTNCHECK_GCC_X86_BUILTINS
  // GCC 12 leaves SimdOps::fma's lane loop scalar at 4 lanes (a vfmadd231sd
  // and two shuffles a lane: the f64 path ran 3.5 times slower than on
  // AVX-512). The builtin is checked for FMA where it is expanded, after
  // inlining into the AVX2 build, the one place Simd<32> is used.
  static ATTNCHECK_INLINE d fma(d a, d b, d c) { return __builtin_ia32_vfmaddpd256(a, b, c); }
#endif
  static ATTNCHECK_INLINE d splat(double x) {
    const d v = {x};
    return __builtin_shufflevector(v, v, 0, 0, 0, 0);
  }
  static ATTNCHECK_INLINE f splatf(float x) {
    const f v = {x};
    return __builtin_shufflevector(v, v, 0, 0, 0, 0, 0, 0, 0, 0);
  }
};
template <>
struct Simd<16> : SimdOps<Simd<16>, v2d, v4f, v2f> {
  static ATTNCHECK_INLINE v2d to_double(v2f h) { return __builtin_convertvector(h, v2d); }
  static ATTNCHECK_INLINE v2f to_float(v2d v) { return __builtin_convertvector(v, v2f); }
  static ATTNCHECK_INLINE d splat(double x) {
    const d v = {x};
    return __builtin_shufflevector(v, v, 0, 0);
  }
  static ATTNCHECK_INLINE f splatf(float x) {
    const f v = {x};
    return __builtin_shufflevector(v, v, 0, 0, 0, 0);
  }
};

// The kernels' loops over keys keep 8 lanes of partial sums and maxima, as
// eight doubles: 8 / kD vectors of S. Their horizontal reductions run over
// those 8 lanes in order, so every build reduces in the same order.
inline constexpr int kLanes = 8;

// The 8 lanes of parts [kLanes / S::kD] in order, as doubles.
template <class S>
ATTNCHECK_INLINE void spill_lanes(const typename S::d* parts, double* lanes) {
  #pragma GCC unroll 8  // whole: the vectors stay in registers
  for (int p = 0; p < kLanes / S::kD; ++p) S::store(lanes + p * S::kD, parts[p]);
}
template <class S>
ATTNCHECK_INLINE double lanes_max(const typename S::d* parts) {
  double v[kLanes];
  spill_lanes<S>(parts, v);
  double m = v[0];
  for (int l = 1; l < kLanes; ++l) m = v[l] > m ? v[l] : m;
  return m;
}
template <class S>
ATTNCHECK_INLINE double lanes_sum(const typename S::d* parts) {
  double v[kLanes];
  spill_lanes<S>(parts, v);
  double s = 0;
  for (int l = 0; l < kLanes; ++l) s += v[l];
  return s;
}

// The Simd of the width run_in_vector_build (parallel/vector_isa.h) hands a
// kernel's body; the lambda must be always inline to be compiled into each build:
//   return run_in_vector_build([&](auto w) ATTNCHECK_INLINE_LAMBDA {
//     return body<SimdOf<decltype(w)>>(...);
//   });
#define ATTNCHECK_INLINE_LAMBDA __attribute__((always_inline))
template <class Width>
using SimdOf = Simd<Width::value>;

}  // namespace attncheck::oracle_detail
