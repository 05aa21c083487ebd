// What the format laws scale_power_of_two and equal_values_across_formats (ABI v3, "Stored
// formats of K and V" and "Laws version 3 makes possible") build from a case whose K or V is
// stored in a format other than the dtype: the same case with one side's scales (or every d of
// a block format) times 2^x, and the same real values stored in a second format. Both keep the
// real values exact (docs/kv-formats.md, "Why every decoded value is exact in double": points 2
// and 3), so the oracle of the twin is the case's (scaled by 2^x for V).
//
// Example usage (inside a law's check):
//   if (auto span = power_of_two_span(p, false)) { Problem up = with_side_scaled(p, false, span->hi); ... }
//   if (auto twin = same_values_other_format(p, true, impl.kv_formats())) { ... twin->problem ... }
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "problem/problem.h"

namespace attncheck {

// The exponents x for which one side (K: is_k) times 2^x keeps every live nonzero real value,
// every scale (every d of a block format) and, for K, every partial product |q| |k| head_dim
// inside binary16's normal range [2^-14, 2^14] (2^15 for the products), which also lies inside
// the normal range of every dtype that comes with a stored format (F32, F16, BF16): binary
// arithmetic on the scaled side is then the case's arithmetic times 2^x, bit for bit. lo <= hi,
// both within [-kMaxScaleExponent, kMaxScaleExponent]. nullopt when the side is stored unscaled
// (DTYPE, F16, BF16) or no two exponents fit.
struct ExponentSpan {
  int lo = 0, hi = 0;
};
inline constexpr int kMaxScaleExponent = 12;
std::optional<ExponentSpan> power_of_two_span(const Problem& p, bool is_k);

// p with one side's real values (live and dead) and its scales or d times 2^x; for K, the
// softmax scale times 2^-x (the default scale made explicit first: the float nearest
// 1/sqrt(head_dim)), so that every logit is the case's.
Problem with_side_scaled(const Problem& p, bool is_k, int x);

// The same real values of one side stored in the partner format (the spec's pairs): INT4 as
// INT8 (same scales and granularity: codes in [-8, 7]); INT8 with a scale that is a normal
// binary16, one per (batch, kv head) or coarser, and channels a multiple of 32 as Q8_0 with
// every d = that scale; F16 keys of an F32 call as F32 (DTYPE). nullopt when the side has no
// partner, the values do not allow it, or `offered` (Implementation::kv_formats, bit 1u << f)
// lacks the partner format. `how` describes the twin for messages.
struct FormatTwin {
  Problem problem;
  std::string how;
};
std::optional<FormatTwin> same_values_other_format(const Problem& p, bool is_k, uint32_t offered);

}  // namespace attncheck
