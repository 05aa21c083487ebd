// The problems the fuzz targets judge: the generators' own (gen/generators.h,
// problem_from_bytes), reading their choices from the fuzzer's bytes, with the
// options below. One generator serves RapidCheck and the fuzzers, so a feature
// the generators learn reaches the fuzzers the same day.
//
// fuzz_options says what a target's problems may hold:
//   - the features of the implementation under test (ABI v2 bits, MASK, CAUSAL);
//   - small caps, so that one input costs well under a millisecond:
//       ATTNCHECK_FUZZ_MAX_BATCH (2), ATTNCHECK_FUZZ_MAX_HEADS (2),
//       ATTNCHECK_FUZZ_MAX_LEN (6: q_len and kv_len), ATTNCHECK_FUZZ_MAX_DIM (6: head_dim and value_dim),
//     read from the environment once (a grouped-query call may still get 4, 6
//     or 8 query heads: the generators' own rule, feature_draws.h, since fewer
//     heads cannot tell a right grouping from a wrong one);
//   - every value family, with the fuzz palette beside them (kSpecials: edge
//     values, ±inf, NaN, subnormals, small k/8, raw bit patterns; kRawBits),
//     and kFiniteOnly for a target whose laws need finite inputs.
// The byte layout is the generators' reading order (fuzz/README.md, "How the
// bytes become a problem"); missing bytes read as zero, the simplest choice.
//
// Example usage (fuzz_differential.cpp):
//   const Problem p = fuzz::fuzz_problem(data, size, impl->features());
#pragma once

#include <cstddef>
#include <cstdint>

#include "gen/gen_options.h"
#include "problem/problem.h"

namespace attncheck::fuzz {

// The caps of a target's problems.
struct FuzzCaps {
  int64_t max_batch = 2, max_heads = 2, max_len = 6, max_dim = 6;
  // The defaults overridden by ATTNCHECK_FUZZ_MAX_* (read on the first call, then kept).
  static const FuzzCaps& from_env();
};

enum class Problems { forward, backward };

// The options a target draws with: within `features` (the backward bit is
// dropped for forward problems and required for backward ones), the caps,
// every dtype, every value family and the fuzz palette (kFiniteOnly added
// when `finite_only`).
GenOptions fuzz_options(FeatureBits features, Problems kind = Problems::forward, bool finite_only = false,
                        const FuzzCaps& caps = FuzzCaps::from_env());

// The problem these bytes choose under those options.
Problem fuzz_problem(const uint8_t* data, std::size_t size, FeatureBits features, bool finite_only = false);
Problem fuzz_backward_problem(const uint8_t* data, std::size_t size, FeatureBits features);

}  // namespace attncheck::fuzz
