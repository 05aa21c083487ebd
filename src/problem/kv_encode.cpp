#include "problem/kv_encode.h"

#include <algorithm>
#include <cmath>

#include "problem/kv_codes.h"
#include "problem/number_text.h"

namespace attncheck {

namespace {

std::string kv_refusal(KvFormat f, int64_t c, double x, const std::string& why) {
  return "channel " + std::to_string(c) + " (" + shortest_text(x, DType::f64) + ") cannot be stored as " +
         std::string(kv_format_name(f)) + ": " + why;
}

// DTYPE, F16, BF16: the dtype row's nearest-even codec; the value must stay finite.
std::string encode_rounded(KvFormat f, DType t, const double* x, int64_t channels, uint8_t* units) {
  const int64_t bytes = static_cast<int64_t>(dtype_bytes(t));
  for (int64_t c = 0; c < channels; ++c) {
    const double v = round_to(t, x[c]);
    if (!std::isfinite(v))
      return kv_refusal(f, c, x[c], std::isfinite(x[c]) ? "it rounds past the largest finite " +
                                                              std::string(dtype_name(t)) + " value"
                                                        : "the value is not finite");
    encode_element(t, x[c], units + c * bytes);
  }
  return {};
}

// FP8, INT8, INT4: x / scale rounded (kv_encode.h: rounding the double quotient is rounding
// the real one), fp8 refused past its range, integers clamped.
std::string encode_scaled(KvFormat f, const double* x, int64_t channels, RowScale scale, uint8_t* units) {
  for (int64_t c = 0; c < channels; ++c) {
    const double s = scale.data[c * scale.channel_stride];
    if (!std::isfinite(x[c])) return kv_refusal(f, c, x[c], "the value is not finite");
    if (!(std::isfinite(s) && s > 0)) return kv_refusal(f, c, x[c], "its scale " + shortest_text(s, DType::f32) +
                                                                        " is not finite and > 0");
    const double t = x[c] / s;
    uint32_t code;
    if (f == KvFormat::fp8_e4m3 || f == KvFormat::fp8_e5m2) {
      if (!nearest_fp8_code(f, t, &code))
        return kv_refusal(f, c, x[c], "x / scale = " + shortest_text(t, DType::f64) +
                                          " rounds past the format's largest finite value");
    } else {
      const double hi = f == KvFormat::int8 ? 127 : 7;
      const double n = std::clamp(std::nearbyint(t), -hi - 1, hi);  // ties to even (the default rounding mode)
      code = f == KvFormat::int8 ? static_cast<uint32_t>(static_cast<int>(n)) & 0xFFu
                                 : static_cast<uint32_t>(static_cast<int>(n) + 8);
    }
    put_code(f, units, c, code);
  }
  return {};
}

// Q8_0 and Q4_0, block m of the row: ggml's reference quantizers, in binary32 as ggml runs them
// (quantize_row_q8_0_ref: d = amax / 127, qs = roundf(x / d); quantize_row_q4_0_ref: d = the
// value of largest magnitude, the first one on a tie, over -8, nibble = min(15, trunc(x / d + 8.5))).
std::string encode_block(KvFormat f, const double* x, int64_t m, uint8_t* units) {
  constexpr int kQk = 32;
  float xf[kQk];
  float amax = 0.0f, signed_max = 0.0f;
  for (int j = 0; j < kQk; ++j) {
    const int64_t c = m * kQk + j;
    xf[j] = static_cast<float>(x[c]);
    if (!std::isfinite(xf[j]))
      return kv_refusal(f, c, x[c], std::isfinite(x[c]) ? "it is past binary32's range, ggml's input"
                                                        : "the value is not finite");
    if (amax < std::fabs(xf[j])) {
      amax = std::fabs(xf[j]);
      signed_max = xf[j];
    }
  }
  const float d = f == KvFormat::q8_0 ? amax / 127.0f : signed_max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  uint16_t d_bits;
  encode_element(DType::f16, static_cast<double>(d), &d_bits);
  if (!std::isfinite(code_value(KvFormat::f16, d_bits)))
    return kv_refusal(f, m * kQk, x[m * kQk], "block " + std::to_string(m) + "'s d = " +
                                                  shortest_text(d, DType::f32) + " is past binary16's range");
  put_block_d(f, units, m, d_bits);
  for (int j = 0; j < kQk; ++j) {
    uint32_t code = f == KvFormat::q8_0 ? 0u : 8u;  // the code of 0
    // 1/d overflows binary32 only when d < 2^-128, which binary16 stores as 0: every value
    // of the block decodes to 0 whatever its codes, and ggml's conversion of inf or NaN to an
    // integer is the platform's (undefined in C), so the block gets zero codes.
    if (std::isfinite(id)) {
      const float scaled = xf[j] * id;
      code = f == KvFormat::q8_0 ? static_cast<uint32_t>(static_cast<int>(std::round(scaled))) & 0xFFu
                                 : static_cast<uint32_t>(std::min(15, static_cast<int>(scaled + 8.5f)));
    }
    put_code(f, units, m * kQk + j, code);
  }
  return {};
}

}  // namespace

bool nearest_fp8_code(KvFormat f, double t, uint32_t* code) {
  const bool e4m3 = f == KvFormat::fp8_e4m3;
  const int mantissa_bits = e4m3 ? 3 : 2;
  const int bias = e4m3 ? 7 : 15;
  const double max_finite = e4m3 ? 448.0 : 57344.0;
  const int e_min = 1 - bias;  // the exponent of the smallest normal; subnormals share its quantum
  const double a = std::fabs(t);
  if (!(a <= max_finite * 2)) return false;  // NaN, infinities and everything far past the range
  const int e = a == 0 ? e_min : std::max(std::ilogb(a), e_min);
  const double quantum = std::ldexp(1.0, e - mantissa_bits);
  const double n = std::nearbyint(a / quantum);  // exact division; ties to even
  const double v = n * quantum;
  if (v > max_finite) return false;
  uint32_t bits;
  if (v < std::ldexp(1.0, e_min)) {
    bits = static_cast<uint32_t>(n);  // subnormal (or zero): exponent field 0, mantissa n
  } else {
    const int ev = std::ilogb(v);  // n may have carried into the next binade
    const auto mantissa = static_cast<uint32_t>(std::ldexp(v, mantissa_bits - ev)) - (1u << mantissa_bits);
    bits = (static_cast<uint32_t>(ev + bias) << mantissa_bits) | mantissa;
  }
  *code = std::signbit(t) ? bits | 0x80u : bits;
  return true;
}

std::string encode_row(KvFormat f, DType dtype, const double* x, int64_t channels, RowScale scale, uint8_t* units) {
  switch (f) {
    case KvFormat::dtype: return encode_rounded(f, dtype, x, channels, units);
    case KvFormat::f16: return encode_rounded(f, DType::f16, x, channels, units);
    case KvFormat::bf16: return encode_rounded(f, DType::bf16, x, channels, units);
    case KvFormat::q8_0:
    case KvFormat::q4_0:
      for (int64_t m = 0; m < kv_row_units(f, channels); ++m)
        if (std::string why = encode_block(f, x, m, units); !why.empty()) return why;
      return {};
    default: return encode_scaled(f, x, channels, scale, units);
  }
}

}  // namespace attncheck
