#include "problem/kv_codes.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace attncheck {

namespace {

constexpr int64_t kKvBlockChannels = 32;

// The byte of channel c's code and the shift of its nibble (0 for whole bytes), by the rules of
// kv_codes.h. 16-bit codes are handled by the callers.
struct KvCodePlace {
  int64_t byte;
  int shift;
};

KvCodePlace kv_code_place(KvFormat f, int64_t c) {
  switch (f) {
    case KvFormat::int4: return {c / 2, c % 2 == 0 ? 0 : 4};
    case KvFormat::q8_0: return {(c / kKvBlockChannels) * info(f).unit_bytes + 2 + c % kKvBlockChannels, 0};
    case KvFormat::q4_0: {
      const int64_t j = c % kKvBlockChannels;
      return {(c / kKvBlockChannels) * info(f).unit_bytes + 2 + j % 16, j < 16 ? 0 : 4};
    }
    default: return {c, 0};  // fp8, int8: one byte a channel
  }
}

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

// Every e4m3 or e5m2 code's value, computed once from the bit fields above.
struct Fp8Table {
  double value[256];
  Fp8Table(int mantissa_bits, int bias, bool ieee_specials) {
    for (uint32_t code = 0; code < 256; ++code) value[code] = fp8_value(code, mantissa_bits, bias, ieee_specials);
  }
};

// Finite codes of a 16- or 8-bit floating format in the order of finite_code: the positive
// ones (from +0 up, a prefix of the codes), then the same with the sign bit.
uint32_t signed_finite_code(int64_t index, int64_t positive_count, uint32_t sign_bit) {
  return index < positive_count ? static_cast<uint32_t>(index)
                                : sign_bit | static_cast<uint32_t>(index - positive_count);
}

}  // namespace

uint32_t get_code(KvFormat f, const uint8_t* units, int64_t c) {
  if (info(f).code_bits == 16) {
    uint16_t w;
    std::memcpy(&w, units + 2 * c, 2);
    return w;
  }
  const KvCodePlace at = kv_code_place(f, c);
  const uint32_t byte = units[at.byte];
  return info(f).code_bits == 4 ? (byte >> at.shift) & 0xFu : byte;
}

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

double code_value(KvFormat f, uint32_t code) {
  switch (f) {
    case KvFormat::f16:
    case KvFormat::bf16: {
      const auto w = static_cast<uint16_t>(code);
      return decode_element(f == KvFormat::f16 ? DType::f16 : DType::bf16, &w);  // dtype.cpp's codec
    }
    case KvFormat::fp8_e4m3: {
      static const Fp8Table e4m3(3, 7, false);
      return e4m3.value[code & 0xFFu];
    }
    case KvFormat::fp8_e5m2: {
      static const Fp8Table e5m2(2, 15, true);
      return e5m2.value[code & 0xFFu];
    }
    case KvFormat::int8:
    case KvFormat::q8_0: return static_cast<int8_t>(static_cast<uint8_t>(code));
    case KvFormat::int4:
    case KvFormat::q4_0: return static_cast<double>(static_cast<int>(code & 0xFu) - 8);
    case KvFormat::dtype: break;
  }
  return std::numeric_limits<double>::quiet_NaN();  // dtype has no codes here
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
