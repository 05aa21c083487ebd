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
#include <cstring>

#include "problem/kv_format.h"

namespace attncheck {

// The byte that holds channel c's code and the shift of its nibble (0 for whole bytes), for the
// 8- and 4-bit formats: the one statement of INT4's pairs and Q4_0's halves.
struct KvCodePlace {
  int64_t byte;
  int shift;
};
constexpr KvCodePlace kv_code_place(KvFormat f, int64_t c) {
  constexpr int64_t kBlock = 32;  // channels of a Q8_0 or Q4_0 block
  switch (f) {
    case KvFormat::int4: return {c / 2, c % 2 == 0 ? 0 : 4};  // pairs: even channel low
    case KvFormat::q8_0: return {(c / kBlock) * info(f).unit_bytes + 2 + c % kBlock, 0};
    case KvFormat::q4_0: {  // halves: channels j and 16 + j share qs[j], j low
      const int64_t j = c % kBlock;
      return {(c / kBlock) * info(f).unit_bytes + 2 + j % 16, j < 16 ? 0 : 4};
    }
    default: return {c, 0};  // fp8, int8: one byte a channel
  }
}

inline uint32_t get_code(KvFormat f, const uint8_t* units, int64_t c) {
  if (info(f).code_bits == 16) {
    uint16_t w;
    std::memcpy(&w, units + 2 * c, 2);
    return w;
  }
  const KvCodePlace at = kv_code_place(f, c);
  const uint32_t byte = units[at.byte];
  return info(f).code_bits == 4 ? (byte >> at.shift) & 0xFu : byte;
}
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
// code_value of every code of an 8- or 4-bit format, indexed by the code (256 or 16 entries,
// computed once); nullptr for F16, BF16 and DTYPE. For loops over many channels.
const double* code_values(KvFormat f);
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
