// The random draws the problem generators share (generators.cpp for the shape
// and the v1 fields, feature_draws.cpp for the ABI v2 fields). One
// std::mt19937_64 per case, seeded by sample_problem: the same seed draws the
// same problem on every machine (the distributions used here are the
// libstdc++ ones, as they always were).
#pragma once

#include <cstdint>
#include <random>

namespace attncheck::gen {

using Rng = std::mt19937_64;

// An integer in [lo, hi] (lo when hi <= lo).
inline int64_t uniform(Rng& r, int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  return std::uniform_int_distribution<int64_t>(lo, hi)(r);
}
inline double unit(Rng& r) { return std::uniform_real_distribution<double>(0.0, 1.0)(r); }
inline bool chance(Rng& r, double p) { return unit(r) < p; }
inline double gaussian(Rng& r) { return std::normal_distribution<double>(0.0, 1.0)(r); }

}  // namespace attncheck::gen
