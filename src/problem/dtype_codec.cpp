// The poison marker over whole rows (dtype.h): compared and written as an
// unsigned integer of the element's width, whatever the dtype.
#include <cstring>

#include "problem/dtype.h"

namespace attncheck {

namespace {

template <class Word> void fill_word(uint8_t* dst, int64_t n, uint64_t bits) {
  const Word w = static_cast<Word>(bits);  // the low bytes: little-endian, as poison_bits is stored
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * static_cast<int64_t>(sizeof(Word)), &w, sizeof w);
}

template <class Word> int64_t count_word(const uint8_t* src, int64_t n, uint64_t bits, int64_t* first) {
  const Word w = static_cast<Word>(bits);
  auto at = [&](int64_t i) {
    Word x;
    std::memcpy(&x, src + i * static_cast<int64_t>(sizeof(Word)), sizeof x);
    return x;
  };
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) count += at(i) == w;
  if (count > 0)
    for (int64_t i = 0; i < n; ++i)
      if (at(i) == w) {
        *first = i;
        break;
      }
  return count;
}

}  // namespace

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
