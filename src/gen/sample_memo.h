// sample_problem's recent answers, shared, so that a case drawn once is not
// drawn again. The checker draws the same cases often: every implementation
// with the same features draws the same problems for a law at a seed (the
// embedded default runs each law over 28 targets, law by law), and drawing
// the tensors was a fifth of that run's time.
//
// The key is every field of GenOptions (gen_options_key), the seed and the
// size: sample_problem is a function of exactly these, so a hit is the
// problem sample_problem would draw, not a likely one. Problems larger than
// kMaxSampleBytes are never kept; the memo holds at most kMaxSampleMemoBytes
// and forgets the oldest first. Thread-safe; one memo per process.
//
// Example usage:
//   const std::string key = gen_options_key(opts);       // once per options
//   std::shared_ptr<const Problem> p = sample_problem_shared(opts, key, seed, size);
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "gen/gen_options.h"
#include "problem/problem.h"

namespace attncheck {

inline constexpr std::size_t kMaxSampleBytes = std::size_t{32} << 20;
inline constexpr std::size_t kMaxSampleMemoBytes = std::size_t{256} << 20;

// Every field of `options` as bytes: equal keys, equal options.
std::string gen_options_key(const GenOptions& options);

// sample_problem(options, seed, size), kept or drawn. `options_key` is
// gen_options_key(options) (callers reckon it once for many draws).
std::shared_ptr<const Problem> sample_problem_shared(const GenOptions& options, const std::string& options_key,
                                                     uint64_t seed, int size);

// How often sample_problem_shared found its problem kept and how often it
// drew one, since the process started (for tests).
struct SampleMemoCounts {
  std::size_t hits = 0, misses = 0;
};
SampleMemoCounts sample_memo_counts();

}  // namespace attncheck
