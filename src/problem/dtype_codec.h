// The conversions behind DTypeInfo's encode, decode, encode_n and decode_n
// (dtype.cpp's rows point at them): one loop per storage format, written so
// the compiler can vectorise it, and the one-element functions as that loop
// over one element, so the two cannot disagree. The native formats are plain
// conversions; the 16-bit formats go through float. Rounding double -> float
// -> half can round twice; for values already in float (everything the
// generators make) it is exact.
#pragma once

#include <Eigen/Core>
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
template <class Half> void encode_half(const double* src, int64_t n, uint8_t* dst) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t b = Eigen::numext::bit_cast<uint16_t>(Half(static_cast<float>(src[i])));
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
