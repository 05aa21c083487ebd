// ABI v3's declared numerics (docs/abi/plugin-abi-v3.md, "Declared numerics";
// docs/tolerance.md, "Declared numerics"): where each ATTNCHECK_NUMERICS_* bit
// applies, what a call where one applies promises of q, and the allowance the
// oracle's bound adds for it.
//
//   p.numerics = numerics_that_apply(p, impl.numerics());   // the generator
//   if (auto why = numerics_inconsistency(p); !why.empty()) ...  // Problem::inconsistency
//   q8_0_query_allowance(a)  // e_c of a channel whose 32-block's largest |q_c| is a
#pragma once

#include <cstdint>
#include <string>

#include "problem/problem.h"

namespace attncheck {

inline constexpr int64_t kNumericsQAsQ8_0 = ATTNCHECK_NUMERICS_Q_AS_Q8_0;
inline constexpr int64_t kNumericsKvPrecision = ATTNCHECK_NUMERICS_KV_PRECISION;
// The bits a Problem may hold: those the bound widens by. KV_PRECISION is not
// derived yet (docs/tolerance.md says what it would take), so no problem holds it.
inline constexpr int64_t kJudgedNumerics = kNumericsQAsQ8_0;
// q's elements in a call where a bit applies: finite and below 2^15 in magnitude.
inline constexpr double kNumericsQueryLimit = 32768.0;
// Channels of a ggml q8_0 block of q.
inline constexpr int64_t kQ8_0QueryBlock = 32;

// The bits of `declared` (ATTNCHECK_NUMERICS_*) that apply to p's call:
// Q_AS_Q8_0 with K in Q8_0 or Q4_0; KV_PRECISION with dtype f32 and K or V in
// F16, BF16, Q8_0 or Q4_0.
int64_t numerics_that_apply(const Problem& p, int64_t declared);

// "" when p.numerics holds only judged bits that apply to p's call, and q keeps
// the spec's precondition for them (every element finite and below 2^15).
std::string numerics_inconsistency(const Problem& p);

// Q_AS_Q8_0's allowance for one query element, e_c = (9/16) d + 2^-18 with
// d = a / 127 and a the largest |q_c| of the element's block of 32 channels:
// ggml's q8_0 rounding of q (n_c d', d' = d or d in binary16) stays within it.
inline double q8_0_query_allowance(double block_max_abs) {
  return 9.0 / 16.0 * (block_max_abs / 127.0) + 0x1p-18;
}

}  // namespace attncheck
