// The seed corpora of the problem-taking fuzz targets, written by the
// generators themselves (fuzz/make_seed_corpus.cpp): random bytes go through
// the targets' own byte source (fuzz_problems.h), and an input is kept, cut to
// the bytes its problem read, when it covers something the kept ones do not:
// a dtype, an ABI feature, a causal rule, a value family, NaN or inf among the
// values, the law or implementation its pick bytes choose. Cut to what it read,
// an input replays exactly the problem it was kept for (ByteChoices reads
// nothing past that, and reads missing bytes as zero).
//
// Example usage:
//   for (const SeedTarget& t : seed_targets())
//     for (const Seed& s : choose_seeds(t)) write(dir / t.name / s.name, s.bytes);
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "problem/problem.h"

namespace attncheck::fuzz {

// How one target turns an input into a problem.
struct SeedTarget {
  std::string name;          // the target: fuzz_differential, ... (and its corpus folder)
  std::string prefix;        // prepended to every seed's name ("v2_" for a second set of one target)
  std::size_t pick_bytes;    // bytes before the problem's: the pick (law_sweep.h), fuzz_overflow's value mix
  std::vector<FeatureBits> impl_features;  // what byte 0 picks among (the features each declares)
  std::size_t law_count;     // the laws byte 1 picks among (1: no choice)
  bool backward = false;     // fuzz_gradients' backward problems
  bool mix_byte = false;     // fuzz_overflow: the byte after the pick says finite (even) or any
};

// fuzz_differential, fuzz_overflow, fuzz_gradients (the built-in references'
// features and laws) and fuzz_plugin (for a v1 plugin such as the example's,
// and a "v2_" set for a plugin that declares every ABI v2 feature).
std::vector<SeedTarget> seed_targets();

// The problem the target draws from these bytes and what it covers.
struct Drawn {
  Problem problem;
  std::size_t consumed = 0;  // bytes read, the pick bytes included
  std::set<std::string> covers;
};
Drawn draw_as_target(const SeedTarget& t, const uint8_t* data, std::size_t size);

struct Seed {
  std::string name;
  std::vector<uint8_t> bytes;
};
// The empty input, then the inputs kept from `tries` random draws, the n-th of
// 4 + n random bytes (short ones first; deterministic: the same seeds every
// time), none longer than `max_len` (the targets' .options).
std::vector<Seed> choose_seeds(const SeedTarget& t, int tries = 3000, std::size_t max_len = 4096);

// Everything `tries` random draws of their own cover (not choose_seeds' draws:
// what a corpus of the target should cover too).
std::set<std::string> reachable(const SeedTarget& t, int tries = 1000, std::size_t max_len = 4096);

// problem.dict: each dtype's edge values as the byte source reads a raw
// element of kSpecials (the selector byte, then the pattern, little-endian).
std::string problem_dictionary();

}  // namespace attncheck::fuzz
