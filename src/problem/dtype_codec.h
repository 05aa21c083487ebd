// The conversions behind DTypeInfo's encode, decode, encode_n and decode_n
// (dtype.cpp's rows point at them): one loop per storage format, written so
// the compiler can vectorise it, and the one-element functions as that loop
// over one element, so the two cannot disagree. The native formats are plain
// conversions; the 16-bit formats go through float, rounded to odd
// (float_round_to_odd below), so double -> float -> half rounds once: a plain
// double -> float step rounds twice (5370.00023 went to 5370.0f, a tie, and
// on to 5368 in f16 where 5372 is nearest, about one value in 40,000).
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace attncheck::codec {

template <class T> void encode_native(const double* src, int64_t n, uint8_t* dst) {
  for (int64_t i = 0; i < n; ++i) {
    const T v = static_cast<T>(src[i]);
    std::memcpy(dst + i * static_cast<int64_t>(sizeof(T)), &v, sizeof v);
  }
}
template <class T> void decode_native(const uint8_t* src, int64_t n, double* dst) {
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, src + i * static_cast<int64_t>(sizeof(T)), sizeof v);
    dst[i] = static_cast<double>(v);
  }
}
// x as a float rounded to odd: x itself when a float holds it, else the
// float next to x toward zero with its last bit set. Rounding that float to
// a format with at least 2 fewer significand bits (half: 11, bfloat16: 8,
// against float's 24; also in their subnormal ranges, which float covers
// with normal or finer subnormal steps) gives x rounded once to nearest even,
// the double rounding's error gone (Boldo and Melquiond, "Emulation of FMA
// and correctly rounded sums: proved algorithms using rounding to odd", 2008).
// Beyond float's range the odd neighbour is FLT_MAX, which both formats
// round to infinity, as they round x; NaN stays NaN.
inline float float_round_to_odd(double x) {
  float f = static_cast<float>(x);  // to nearest
  if (static_cast<double>(f) != x && x == x) {
    uint32_t bits = Eigen::numext::bit_cast<uint32_t>(f);
    if (std::fabs(static_cast<double>(f)) > std::fabs(x)) bits -= 1;  // one step toward zero: the truncation
    f = Eigen::numext::bit_cast<float>(bits | 1u);
  }
  return f;
}

template <class Half> void encode_half(const double* src, int64_t n, uint8_t* dst) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t b = Eigen::numext::bit_cast<uint16_t>(Half(float_round_to_odd(src[i])));
    std::memcpy(dst + 2 * i, &b, 2);
  }
}
template <class Half> void decode_half(const uint8_t* src, int64_t n, double* dst) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t b;
    std::memcpy(&b, src + 2 * i, 2);
    dst[i] = static_cast<float>(Eigen::numext::bit_cast<Half>(b));
  }
}

// One element through a row loop, in the signatures of DTypeInfo's encode and decode.
template <void (*Row)(const double*, int64_t, uint8_t*)> void one_encoded(double x, void* dst) {
  Row(&x, 1, static_cast<uint8_t*>(dst));
}
template <void (*Row)(const uint8_t*, int64_t, double*)> double one_decoded(const void* src) {
  double x;
  Row(static_cast<const uint8_t*>(src), 1, &x);
  return x;
}

}  // namespace attncheck::codec
