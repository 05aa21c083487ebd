// Real values to stored K and V codes, for the generator (docs/kv-formats.md). Generated
// problems should hold values the format stores exactly: draw codes directly (finite_code and
// put_code, kv_codes.h) and decode them, or encode values that are representable, which this
// stores exactly. Anything else is rounded once:
//   DTYPE, F16, BF16  to nearest, ties to even (the dtype rows' codecs, dtype.h)
//   FP8_E4M3/E5M2     x / scale to nearest, ties to even
//   INT8, INT4        x / scale to the nearest integer, ties to even, clamped to [-128, 127] /
//                     [-8, 7] as a quantizer saturates
//   Q8_0, Q4_0        ggml's reference quantizers (quantize_row_q8_0_ref, quantize_row_q4_0_ref)
//                     in binary32 arithmetic on x rounded to binary32, d stored as binary16
// x / scale is rounded once in double first; that cannot change the result, since a double
// quotient of a double by a binary32 lands on a midpoint of the target's grid only when it is
// that midpoint exactly (the neighbours of x are too far apart to round onto one).
// Refused, with the channel named: a NaN or infinite x, and a value whose rounding leaves the
// format's finite range (FP8 past 448 / 57344 times the scale, F16 past 65504, a block whose d
// overflows binary16): the spec makes every live element finite, so nothing is saturated.
#pragma once

#include <cstdint>
#include <string>

#include "problem/kv_decode.h"
#include "problem/kv_format.h"

namespace attncheck {

// Writes x[0..channels) as one row of format f (kv_row_units(f, channels) units at `units`;
// channels a whole number of units). scale: the row's scales, for the scaled formats only.
// Returns an empty string, or why the row cannot be stored (nothing is then promised of `units`).
std::string encode_row(KvFormat f, DType dtype, const double* x, int64_t channels, RowScale scale, uint8_t* units);

// The code of the fp8 value nearest t (ties to even), or false when that value is past the
// format's largest finite one. For fp8_e4m3 and fp8_e5m2 only.
bool nearest_fp8_code(KvFormat f, double t, uint32_t* code);

}  // namespace attncheck
