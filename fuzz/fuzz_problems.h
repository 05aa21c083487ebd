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
//   - or, instead of the caps, the shapes of `attncheck check`: a profile
//     (ATTNCHECK_FUZZ_PROFILE=decode) narrowed by check's shape flags in
//     check's syntax (ATTNCHECK_FUZZ_SHAPES="--head-dim 128 --kv-len 1..512"),
//     read by check's own reader (run/shape_flags.h), so a kernel's head_dim-128
//     fast path and its long rows can be fuzzed; the bytes still decode through
//     the one generator, the profile only decides the shape domain;
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
#include <optional>
#include <string>

#include "gen/gen_options.h"
#include "problem/problem.h"

namespace attncheck::fuzz {

// The caps of a target's problems.
struct FuzzCaps {
  int64_t max_batch = 2, max_heads = 2, max_len = 6, max_dim = 6;
  // The defaults overridden by ATTNCHECK_FUZZ_MAX_* (fuzz_shapes_from_env().caps).
  static const FuzzCaps& from_env();
};

// The shape domain of a target's problems: the caps, or a profile of check's.
struct FuzzShapes {
  FuzzCaps caps;
  // Set: the profile's options narrowed by the shape flags (shape_options);
  // its shapes (domains, ranges, head dims) replace the caps.
  std::optional<GenOptions> profile;
  std::string flags;  // as check's command line spells them: "--profile decode --head-dim 128"; empty for the caps
};

// The values of the shape variables (nullptr or empty: unset).
struct FuzzShapeEnv {
  const char* profile = nullptr;  // ATTNCHECK_FUZZ_PROFILE
  const char* shapes = nullptr;   // ATTNCHECK_FUZZ_SHAPES
  const char* max_batch = nullptr, *max_heads = nullptr, *max_len = nullptr, *max_dim = nullptr;  // ATTNCHECK_FUZZ_MAX_*
  static FuzzShapeEnv of_this_process();
};

// The shapes those values ask for; nullopt with `error` naming the variable
// and its bad value (an unknown profile or flag, a bad range, a cap that is
// not a whole number from 1 to 2^20, caps beside a profile).
std::optional<FuzzShapes> read_fuzz_shapes(const FuzzShapeEnv& env, std::string& error);

// This process's, read on the first call and kept; a bad value ends the
// process (exit 2) with the error on stderr, so a target calls it from
// LLVMFuzzerInitialize (announce_shapes): refused before any input runs.
const FuzzShapes& fuzz_shapes_from_env();

// Checks the variables (exit 2 on a bad one) and says on stderr which
// shapes `target` draws when a profile replaces the caps.
void announce_shapes(const char* target);

enum class Problems { forward, backward };

// The options a target draws with: within `features` (the backward bit is
// dropped for forward problems and required for backward ones), the caps,
// every dtype, every value family and the fuzz palette (kFiniteOnly added
// when `finite_only`).
GenOptions fuzz_options(FeatureBits features, Problems kind = Problems::forward, bool finite_only = false,
                        const FuzzCaps& caps = FuzzCaps::from_env());
// The same with the shapes of `shapes`: its profile's when it has one (the
// values and features as above: the profile decides the shapes only).
GenOptions fuzz_options(FeatureBits features, Problems kind, bool finite_only, const FuzzShapes& shapes);

// The problem these bytes choose under the options of fuzz_shapes_from_env().
Problem fuzz_problem(const uint8_t* data, std::size_t size, FeatureBits features, bool finite_only = false);
Problem fuzz_backward_problem(const uint8_t* data, std::size_t size, FeatureBits features);

}  // namespace attncheck::fuzz
