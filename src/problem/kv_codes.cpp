#include "problem/kv_codes.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace attncheck {

namespace {

double fp8_value(uint32_t code, int mantissa_bits, int bias, bool ieee_specials) {
  const bool negative = (code & 0x80u) != 0;
  const int e = static_cast<int>((code & 0x7Fu) >> mantissa_bits);
  const int m = static_cast<int>(code & ((1u << mantissa_bits) - 1));
  const int e_max = (1 << (7 - mantissa_bits)) - 1;
  double v;
  if (ieee_specials && e == e_max)  // e5m2: IEEE-like
    v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  else if (!ieee_specials && e == e_max && m == (1 << mantissa_bits) - 1)  // e4m3fn: only s 1111 111
    v = std::numeric_limits<double>::quiet_NaN();
  else if (e == 0)
    v = std::ldexp(static_cast<double>(m), 1 - bias - mantissa_bits);
  else
    v = std::ldexp(static_cast<double>((1 << mantissa_bits) + m), e - bias - mantissa_bits);
  return negative ? -v : v;
}

// The value of every code of an 8- or 4-bit format, computed once, by the rules of kv_codes.h.
struct KvCodeTable {
  double value[256];
  explicit KvCodeTable(KvFormat f) {
    for (uint32_t code = 0; code < 256; ++code) {
      switch (f) {
        case KvFormat::fp8_e4m3: value[code] = fp8_value(code, 3, 7, false); break;
        case KvFormat::fp8_e5m2: value[code] = fp8_value(code, 2, 15, true); break;
        case KvFormat::int8:
        case KvFormat::q8_0: value[code] = static_cast<int8_t>(static_cast<uint8_t>(code)); break;
        default: value[code] = static_cast<double>(static_cast<int>(code & 0xFu) - 8); break;  // int4, q4_0
      }
    }
  }
};

// Finite codes of a 16- or 8-bit floating format in the order of finite_code: the positive
// ones (from +0 up, a prefix of the codes), then the same with the sign bit.
uint32_t signed_finite_code(int64_t index, int64_t positive_count, uint32_t sign_bit) {
  return index < positive_count ? static_cast<uint32_t>(index)
                                : sign_bit | static_cast<uint32_t>(index - positive_count);
}

}  // namespace

void put_code(KvFormat f, uint8_t* units, int64_t c, uint32_t code) {
  if (info(f).code_bits == 16) {
    const auto w = static_cast<uint16_t>(code);
    std::memcpy(units + 2 * c, &w, 2);
    return;
  }
  const KvCodePlace at = kv_code_place(f, c);
  if (info(f).code_bits == 4)
    units[at.byte] = static_cast<uint8_t>((units[at.byte] & ~(0xFu << at.shift)) | ((code & 0xFu) << at.shift));
  else
    units[at.byte] = static_cast<uint8_t>(code);
}

uint16_t get_block_d(KvFormat f, const uint8_t* units, int64_t m) {
  uint16_t d;
  std::memcpy(&d, units + m * info(f).unit_bytes, 2);
  return d;
}

void put_block_d(KvFormat f, uint8_t* units, int64_t m, uint16_t d_bits) {
  std::memcpy(units + m * info(f).unit_bytes, &d_bits, 2);
}

const double* code_values(KvFormat f) {
  static const KvCodeTable e4m3(KvFormat::fp8_e4m3), e5m2(KvFormat::fp8_e5m2), int8(KvFormat::int8),
      nibble(KvFormat::int4);
  switch (f) {
    case KvFormat::fp8_e4m3: return e4m3.value;
    case KvFormat::fp8_e5m2: return e5m2.value;
    case KvFormat::int8:
    case KvFormat::q8_0: return int8.value;
    case KvFormat::int4:
    case KvFormat::q4_0: return nibble.value;
    default: return nullptr;
  }
}

double code_value(KvFormat f, uint32_t code) {
  if (f == KvFormat::f16 || f == KvFormat::bf16) {
    const auto w = static_cast<uint16_t>(code);
    return decode_element(f == KvFormat::f16 ? DType::f16 : DType::bf16, &w);  // dtype.cpp's codec
  }
  const double* values = code_values(f);
  return values ? values[code & 0xFFu] : std::numeric_limits<double>::quiet_NaN();  // dtype has no codes here
}

int64_t finite_code_count(KvFormat f) {
  switch (f) {
    case KvFormat::f16: return 2 * 0x7C00;       // exponent 31 (inf, NaN) left out
    case KvFormat::bf16: return 2 * 0x7F80;      // exponent 255 left out
    case KvFormat::fp8_e4m3: return 2 * 0x7F;    // 0x7F, 0xFF left out
    case KvFormat::fp8_e5m2: return 2 * 0x7C;    // exponent 31 left out
    case KvFormat::int8:
    case KvFormat::q8_0: return 256;
    case KvFormat::int4:
    case KvFormat::q4_0: return 16;
    case KvFormat::dtype: break;
  }
  return 0;
}

uint32_t finite_code(KvFormat f, int64_t index) {
  switch (f) {
    case KvFormat::f16:
    case KvFormat::bf16: return signed_finite_code(index, finite_code_count(f) / 2, 0x8000u);
    case KvFormat::fp8_e4m3:
    case KvFormat::fp8_e5m2: return signed_finite_code(index, finite_code_count(f) / 2, 0x80u);
    case KvFormat::int8:
    case KvFormat::q8_0: return static_cast<uint32_t>(index) & 0xFFu;  // 0, 1, ..., 127, -128, ..., -1
    case KvFormat::int4:
    case KvFormat::q4_0: return static_cast<uint32_t>(index + 8) & 0xFu;  // nibble 8 (0) first
    case KvFormat::dtype: break;
  }
  return 0;
}

}  // namespace attncheck
