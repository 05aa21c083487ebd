// One channel's code in a row of a stored format and what it stands for (docs/kv-formats.md),
// written once: the decoder (kv_decode.h), the encoder (kv_encode.h) and the generators that
// draw codes directly all go through these. Not for KvFormat::dtype (the dtype row's codecs).
//
// A code is the channel's own bits, zero-extended:
//   F16, BF16         the uint16_t (binary16 / bfloat16), host byte order
//   FP8_E4M3/E5M2     the byte
//   INT8, Q8_0        the byte of the int8_t (0xFF is -1)
//   INT4              the nibble: channel c in byte c/2, bits 0-3 when c is even, 4-7 when odd
//   Q4_0              the nibble: channel 32m+j (j < 16) in the low bits of block m's qs[j],
//                     channel 32m+16+j in its high bits (halves, not INT4's pairs)
// A row's units start at `units`; the channel index c counts from the row's first channel.
// Blocks (Q8_0, Q4_0) also hold d, a binary16 at bytes 0-1 of the block.
#pragma once

#include <cstdint>

#include "problem/kv_format.h"

namespace attncheck {

uint32_t get_code(KvFormat f, const uint8_t* units, int64_t c);
void put_code(KvFormat f, uint8_t* units, int64_t c, uint32_t code);
// The d of block m of a Q8_0 or Q4_0 row, as binary16 bits.
uint16_t get_block_d(KvFormat f, const uint8_t* units, int64_t m);
void put_block_d(KvFormat f, uint8_t* units, int64_t m, uint16_t d_bits);

// What a code stands for before its scale or d, exactly:
//   F16, BF16   the binary16 / bfloat16 value
//   FP8_E4M3    s eeee mmm: e = 0: m * 2^-9; else (1 + m/8) * 2^(e-7); 0x7F and 0xFF NaN
//   FP8_E5M2    s eeeee mm: e = 0: m * 2^-16; e < 31: (1 + m/4) * 2^(e-15); e = 31: inf (m = 0), NaN
//   INT8, Q8_0  the int8_t, -128 .. 127
//   INT4, Q4_0  nibble - 8, -8 .. 7
// NaN and infinity codes come back as NaN and +-inf: never turned into a number.
double code_value(KvFormat f, uint32_t code);
inline bool code_is_finite(KvFormat f, uint32_t code) {
  const double v = code_value(f, code);
  return v - v == 0;  // false for NaN and +-inf
}

// The codes whose values are finite, for generators that draw exact values: finite_code(f, i)
// for i in [0, finite_code_count(f)) is each of them once. Index 0 is the code of +0 (nibble 8
// for INT4 and Q4_0), so a fuzzer's zero bytes draw zeros. The d of a block is an F16 code.
int64_t finite_code_count(KvFormat f);
uint32_t finite_code(KvFormat f, int64_t index);

}  // namespace attncheck
