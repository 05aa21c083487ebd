// Where the problem generators (generators.cpp, feature_draws.cpp,
// value_draws.cpp) read every choice they make: one generator, two sources.
//
//   RandomChoices  the seeded random stream RapidCheck's driver and the
//                  sampler use (FastRng, xoshiro256**): the same seed draws the
//                  same problem it always drew, choice for choice.
//   ByteChoices    a fuzzer's input, read from the front. When the bytes run
//                  out every choice reads as zero, its simplest value: an empty
//                  input is the smallest, plainest problem (one element of
//                  each extent, the first dtype, zeros, no feature), and a
//                  short one a small problem, so libFuzzer's mutations of a
//                  byte are local changes of one choice.
//
// The generators are templates over the source (explicitly instantiated for
// both), so a choice costs what the random engine's own call costs: no
// virtual call in the loops that draw a problem's tensors.
//
// A choice and what it reads from the bytes (all little-endian):
//   integer(lo, hi)  the fewest bytes that hold hi - lo; lo + value % (hi - lo + 1);
//                    none when hi <= lo (the random stream draws none either)
//   unit()           2 bytes: value / 65536, in [0, 1)
//   chance(p)        1 byte: true when byte >= 256 (1 - p), so zero reads false
//                    and p = 1 always holds
//   gaussian()       2 bytes: the signed value / 8192, in [-4, 4)
//   bits(n)          n bytes: a raw bit pattern (an element of the dtype)
// fuzz/README.md ("How the bytes become a problem") gives the reading order.
//
// Example usage:
//   gen::RandomChoices r(seed);           // what sample_problem does
//   gen::ByteChoices b(data, size);       // what the fuzz targets do
//   const Problem p = draw_problem_from(options, b);
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>

#include "gen/fast_rng.h"
#include "gen/ziggurat_normal.h"

namespace attncheck::gen {

class RandomChoices final {
 public:
  explicit RandomChoices(uint64_t seed) : rng_(seed) {}

  // An integer in [lo, hi] (lo when hi <= lo), libstdc++'s distribution.
  int64_t integer(int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  double unit() { return rng_.next_unit(); }
  bool chance(double p) { return unit() < p; }
  double gaussian() { return ziggurat_normal(rng_); }
  // The low 8 * bytes bits of one draw (bytes <= 8).
  uint64_t bits(int bytes) {
    const uint64_t x = rng_();
    return bytes >= 8 ? x : x & ((uint64_t{1} << (8 * bytes)) - 1);
  }
  // Which value family a tensor was drawn from (value_draws.cpp): only the
  // byte source keeps it (the seed corpus writer asks it).
  void note_family(unsigned) {}

 private:
  FastRng rng_;
};

class ByteChoices final {
 public:
  ByteChoices(const uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  int64_t integer(int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    int bytes = 1;
    while (bytes < 8 && (span >> (8 * bytes)) != 0) ++bytes;
    const uint64_t v = bits(bytes);
    return span == ~uint64_t{0} ? static_cast<int64_t>(static_cast<uint64_t>(lo) + v)
                                : static_cast<int64_t>(static_cast<uint64_t>(lo) + v % (span + 1));
  }
  double unit() { return static_cast<double>(bits(2)) * 0x1.0p-16; }
  bool chance(double p) { return static_cast<double>(byte()) >= 256.0 * (1.0 - p); }
  double gaussian() { return static_cast<double>(static_cast<int16_t>(bits(2))) * 0x1.0p-13; }
  uint64_t bits(int bytes) {
    uint64_t x = 0;
    for (int i = 0; i < bytes; ++i) x |= static_cast<uint64_t>(byte()) << (8 * i);
    return x;
  }
  void note_family(unsigned family) { families_ |= family; }

  // Bytes read so far (past the end counts too: those read as zero).
  std::size_t consumed() const { return pos_; }
  // The value families (ValueFamily bits) of the tensors drawn so far.
  unsigned families() const { return families_; }

 private:
  uint8_t byte() {
    const uint8_t b = pos_ < size_ ? data_[pos_] : 0;
    ++pos_;
    return b;
  }
  const uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
  unsigned families_ = 0;
};

}  // namespace attncheck::gen
