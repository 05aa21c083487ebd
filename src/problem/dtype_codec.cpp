// The row-at-a-time codecs of dtype.h. Each dtype gets its own loop, written
// so the compiler can vectorise it: the native formats are plain conversions,
// the 16-bit formats go through float exactly as DTypeInfo's per-element
// encode and decode do (double -> float -> half, rounding to nearest even),
// and the poison marker is compared as an integer of the element's width.
#include <Eigen/Core>
#include <cstring>

#include "problem/dtype.h"

namespace attncheck {

namespace {

template <class T> void encode_native(const double* src, int64_t n, uint8_t* dst) {
  for (int64_t i = 0; i < n; ++i) {
    const T v = static_cast<T>(src[i]);
    std::memcpy(dst + i * sizeof(T), &v, sizeof v);
  }
}
template <class T> void decode_native(const uint8_t* src, int64_t n, double* dst) {
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, src + i * sizeof(T), sizeof v);
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

// Word: the unsigned integer of the element's width.
template <class Word> void fill_word(uint8_t* dst, int64_t n, uint64_t bits) {
  const Word w = static_cast<Word>(bits);
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * sizeof(Word), &w, sizeof w);
}
template <class Word> int64_t count_word(const uint8_t* src, int64_t n, uint64_t bits, int64_t* first) {
  const Word w = static_cast<Word>(bits);
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    Word x;
    std::memcpy(&x, src + i * sizeof(Word), sizeof x);
    count += x == w;
  }
  if (count > 0)
    for (int64_t i = 0; i < n; ++i) {
      Word x;
      std::memcpy(&x, src + i * sizeof(Word), sizeof x);
      if (x == w) {
        *first = i;
        break;
      }
    }
  return count;
}

}  // namespace

void encode_elements(DType t, const double* src, int64_t n, uint8_t* dst) {
  switch (t) {
    case DType::f32: return encode_native<float>(src, n, dst);
    case DType::f64: return encode_native<double>(src, n, dst);
    case DType::f16: return encode_half<Eigen::half>(src, n, dst);
    case DType::bf16: return encode_half<Eigen::bfloat16>(src, n, dst);
  }
}

void decode_elements(DType t, const uint8_t* src, int64_t n, double* dst) {
  switch (t) {
    case DType::f32: return decode_native<float>(src, n, dst);
    case DType::f64: return decode_native<double>(src, n, dst);
    case DType::f16: return decode_half<Eigen::half>(src, n, dst);
    case DType::bf16: return decode_half<Eigen::bfloat16>(src, n, dst);
  }
}

void fill_poison(DType t, uint8_t* dst, int64_t n) {
  const DTypeInfo& d = info(t);
  switch (d.bytes) {
    case 2: return fill_word<uint16_t>(dst, n, d.poison_bits);
    case 4: return fill_word<uint32_t>(dst, n, d.poison_bits);
    default: return fill_word<uint64_t>(dst, n, d.poison_bits);
  }
}

int64_t count_poison(DType t, const uint8_t* src, int64_t n, int64_t* first) {
  const DTypeInfo& d = info(t);
  switch (d.bytes) {
    case 2: return count_word<uint16_t>(src, n, d.poison_bits, first);
    case 4: return count_word<uint32_t>(src, n, d.poison_bits, first);
    default: return count_word<uint64_t>(src, n, d.poison_bits, first);
  }
}

}  // namespace attncheck
