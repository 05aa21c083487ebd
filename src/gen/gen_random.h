// Random draws over one FastRng (xoshiro256**, fast_rng.h) for the code that
// draws values of its own from a seed (laws' derived inputs, the sensitivity
// sweep): the same seed draws the same values on every machine (the integer
// and uniform distributions are libstdc++'s; the normal one is ours,
// ziggurat_normal.h). The problem generators read their choices through
// gen/choice_source.h instead, whose RandomChoices makes the same calls.
#pragma once

#include <cstdint>
#include <random>

#include "gen/fast_rng.h"
#include "gen/ziggurat_normal.h"

namespace attncheck::gen {

using Rng = FastRng;

// An integer in [lo, hi] (lo when hi <= lo).
inline int64_t uniform(Rng& r, int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  return std::uniform_int_distribution<int64_t>(lo, hi)(r);
}
inline double unit(Rng& r) { return r.next_unit(); }
inline bool chance(Rng& r, double p) { return unit(r) < p; }
inline double gaussian(Rng& r) { return ziggurat_normal(r); }

}  // namespace attncheck::gen
