// The generators' random engine: xoshiro256** (Blackman and Vigna, 2018),
// seeded through splitmix64. A UniformRandomBitGenerator, so the standard
// distributions take it. Chosen over std::mt19937_64 for speed: drawing q, k,
// v and dout (a few hundred thousand values per case at the default profile's
// largest shapes) was a third of a whole check's time. Its 256-bit state and
// period 2^256 - 1 are far beyond what one case draws, and it is the same on
// every machine (integer arithmetic only).
#pragma once

#include <cstdint>
#include <limits>

namespace attncheck::gen {

class FastRng {
 public:
  using result_type = uint64_t;

  explicit FastRng(uint64_t seed = 0) {
    // splitmix64 spreads any seed (0 included) over the four words, so the
    // state is never all zero.
    for (uint64_t& w : s_) {
      seed += 0x9e3779b97f4a7c15ull;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      w = z ^ (z >> 31);
    }
  }

  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }

  result_type operator()() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // A double uniform in [0, 1) from the top 53 bits.
  double next_unit() { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace attncheck::gen
