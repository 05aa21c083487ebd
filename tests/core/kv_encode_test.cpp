// Real values to version 3's stored K/V formats (src/problem/kv_encode.h; docs/kv-formats.md):
// each test names the plausible mistake it catches.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "f16_nearest.h"
#include "problem/kv_codes.h"
#include "problem/kv_decode.h"
#include "problem/kv_encode.h"

namespace attncheck {
namespace {

uint32_t fp8_code_of(KvFormat f, double t) {
  uint32_t code = 0xDEAD;
  EXPECT_TRUE(nearest_fp8_code(f, t, &code)) << t;
  return code;
}

// Every finite code of every code format comes back from its own value, also through a scale
// (a binary32 that is not a power of two: the quotient is then a real division). Catches a wrong
// exponent at binade boundaries, subnormals encoded as normals, -0 encoded as +0, and INT4's
// or INT8's offset.
TEST(KvEncode, EveryFiniteCodeComesBack) {
  const float scale = 0.375f;
  for (KvFormat f : {KvFormat::f16, KvFormat::bf16, KvFormat::fp8_e4m3, KvFormat::fp8_e5m2, KvFormat::int8,
                     KvFormat::int4}) {
    const bool scaled = info(f).scaled;
    for (int64_t i = 0; i < finite_code_count(f); ++i) {
      const uint32_t code = finite_code(f, i);
      const double x = code_value(f, code) * (scaled ? scale : 1.0);
      uint8_t units[2] = {0, 0};
      ASSERT_EQ(encode_row(f, DType::f32, &x, 1, RowScale{&scale, 0}, units), "") << kv_format_name(f) << " " << x;
      ASSERT_EQ(get_code(f, units, 0), code) << kv_format_name(f) << " value " << x;
      double back;
      ASSERT_TRUE(decode_row(f, DType::f32, units, 1, RowScale{&scale, 0}, &back).finite());
      ASSERT_EQ(back, x);
    }
  }
}

// Ties go to the even code, and near-ties to the nearer one. Catches rounding half away from
// zero (1 + 1/16 to 1.125), truncation (1 + 3/16 to 1.125), and ties in the subnormal range.
TEST(KvEncode, Fp8NearestEven) {
  const KvFormat e4m3 = KvFormat::fp8_e4m3, e5m2 = KvFormat::fp8_e5m2;
  EXPECT_EQ(fp8_code_of(e4m3, 1.0 + 1.0 / 16), 0x38u);  // 1 | 1.125: tie, to 1 (m = 0)
  EXPECT_EQ(fp8_code_of(e4m3, 1.0 + 3.0 / 16), 0x3Au);  // 1.125 | 1.25: tie, to 1.25 (m = 2)
  EXPECT_EQ(fp8_code_of(e4m3, 1.0 + 1.0 / 16 + 0x1p-30), 0x39u);  // just past the tie: 1.125
  EXPECT_EQ(fp8_code_of(e4m3, -(1.0 + 1.0 / 16)), 0xB8u);
  EXPECT_EQ(fp8_code_of(e4m3, 0x1p-10), 0x00u);         // 0 | 2^-9: tie, to 0
  EXPECT_EQ(fp8_code_of(e4m3, 3 * 0x1p-10), 0x02u);     // 2^-9 | 2^-8: tie, to m = 2
  EXPECT_EQ(fp8_code_of(e4m3, -0x1p-11), 0x80u);        // to -0
  EXPECT_EQ(fp8_code_of(e4m3, 15 * 0x1p-10), 0x08u);    // 7 * 2^-9 | 2^-6: tie, carries into the normals
  EXPECT_EQ(fp8_code_of(e4m3, 464.0), 0x7Eu);           // 448 | (480): tie, to 448
  uint32_t code;
  EXPECT_FALSE(nearest_fp8_code(e4m3, 464.0001, &code));  // nearer 480, which e4m3fn lacks
  EXPECT_FALSE(nearest_fp8_code(e4m3, NAN, &code));
  EXPECT_EQ(fp8_code_of(e5m2, 1.0 + 1.0 / 8), 0x3Cu);   // 1 | 1.25: tie, to 1
  EXPECT_EQ(fp8_code_of(e5m2, 1.0 + 3.0 / 8), 0x3Eu);   // 1.25 | 1.5: tie, to 1.5
  EXPECT_EQ(fp8_code_of(e5m2, 0x1p-17), 0x00u);         // 0 | 2^-16: tie, to 0
  EXPECT_EQ(fp8_code_of(e5m2, 61439.0), 0x7Bu);         // below the tie with 65536: 57344
  EXPECT_FALSE(nearest_fp8_code(e5m2, 61440.0, &code)); // the tie goes to 65536, past the range
}

// INT8 and INT4: x / scale to the nearest integer, ties to even, clamped. Catches half away
// from zero, a clamp to 127 on the negative side, and INT4 without its offset of 8.
TEST(KvEncode, IntegersNearestEvenClamped) {
  const float half = 0.5f;
  const double x[6] = {1.25, 1.75, -1.25, 100.0, -100.0, 0.2};
  uint8_t units[6];
  ASSERT_EQ(encode_row(KvFormat::int8, DType::f32, x, 6, RowScale{&half, 0}, units), "");
  const int8_t want8[6] = {2, 4, -2, 127, -128, 0};  // 2.5, 3.5, -2.5: even; 200, -200: clamped
  for (int c = 0; c < 6; ++c) EXPECT_EQ(static_cast<int8_t>(units[c]), want8[c]) << c;
  ASSERT_EQ(encode_row(KvFormat::int4, DType::f32, x, 6, RowScale{&half, 0}, units), "");
  const int want4[6] = {2, 4, -2, 7, -8, 0};
  for (int c = 0; c < 6; ++c) EXPECT_EQ(static_cast<int>(get_code(KvFormat::int4, units, c)) - 8, want4[c]) << c;
}

// F16 and BF16 storage rounds as the dtype rows do, once to nearest even (f16 against
// tests/support/f16_nearest.h, written apart from the codec); overflow is refused, not inf.
TEST(KvEncode, SixteenBitNearestAndRefusedPastRange) {
  const double x[4] = {1.0 + 0x1p-11, 1.0 + 3 * 0x1p-11, 5370.00023, 0x1p-25 * 3};
  uint8_t units[8];
  ASSERT_EQ(encode_row(KvFormat::f16, DType::f32, x, 4, RowScale{}, units), "");
  double back[4];
  ASSERT_TRUE(decode_row(KvFormat::f16, DType::f32, units, 4, RowScale{}, back).finite());
  for (int c = 0; c < 4; ++c) EXPECT_EQ(back[c], f16_nearest(x[c])) << x[c];
  const double big = 65520.0;
  EXPECT_NE(encode_row(KvFormat::f16, DType::f32, &big, 1, RowScale{}, units).find("channel 0"), std::string::npos);
  const double bf = 1.0 + 0x1p-8;  // tie between 1 and 1 + 2^-7: to 1
  ASSERT_EQ(encode_row(KvFormat::bf16, DType::f32, &bf, 1, RowScale{}, units), "");
  EXPECT_EQ(get_code(KvFormat::bf16, units, 0), 0x3F80u);
}

// Q8_0 as ggml's quantize_row_q8_0_ref: d = amax / 127 stored as binary16, qs = roundf(x / d),
// half away from zero. With amax = 127, d = 1 and 2.5 goes to 3 (nearest-even would give 2).
// Catches ties to even, d = amax / 128, and d kept unrounded by the decoder.
TEST(KvEncode, Q8_0AsGgml) {
  std::vector<double> x(32, 0.0);
  x[0] = -127;
  x[1] = 2.5;
  x[2] = -2.5;
  x[3] = 0.49;
  uint8_t block[34];
  ASSERT_EQ(encode_row(KvFormat::q8_0, DType::f32, x.data(), 32, RowScale{}, block), "");
  EXPECT_EQ(get_block_d(KvFormat::q8_0, block, 0), 0x3C00);  // 1.0
  EXPECT_EQ(static_cast<int8_t>(block[2]), -127);
  EXPECT_EQ(static_cast<int8_t>(block[3]), 3);
  EXPECT_EQ(static_cast<int8_t>(block[4]), -3);
  EXPECT_EQ(static_cast<int8_t>(block[5]), 0);
  // A block of Gaussian-like values decodes within d/2 (+ d's rounding to binary16) of x.
  for (int j = 0; j < 32; ++j) x[j] = std::sin(j * 1.7) * 3.3;
  ASSERT_EQ(encode_row(KvFormat::q8_0, DType::f32, x.data(), 32, RowScale{}, block), "");
  double back[32];
  ASSERT_TRUE(decode_row(KvFormat::q8_0, DType::f32, block, 32, RowScale{}, back).finite());
  const double d = code_value(KvFormat::f16, get_block_d(KvFormat::q8_0, block, 0));
  for (int j = 0; j < 32; ++j) EXPECT_LE(std::fabs(back[j] - x[j]), (0.5 + 1e-4) * d + 127 * d * 0x1p-11) << j;
}

// Q4_0 as ggml's quantize_row_q4_0_ref: d = (the value of largest magnitude, the first one on a
// tie) / -8, nibble = min(15, trunc(x / d + 8.5)), the first 16 channels in the low nibbles.
// Here -4 comes before +4, so d = 0.5 and +4 clamps to nibble 15 (3.5). Catches the last
// maximum taken (d = -0.5), |max| used (d = -0.5 as well, the sign lost), pairs for halves
// (channel 16 in the high nibble of qs[8]), and ties to even or away from zero for ggml's
// halves rounded up (x / d = 2.5 and -2.5 go to 3 and -2).
TEST(KvEncode, Q4_0AsGgml) {
  std::vector<double> x(32, 0.0);
  x[0] = -4;
  x[1] = 4;
  x[16] = 2.0;
  x[17] = 1.25;
  x[18] = -1.25;
  uint8_t block[18];
  ASSERT_EQ(encode_row(KvFormat::q4_0, DType::f32, x.data(), 32, RowScale{}, block), "");
  EXPECT_EQ(get_block_d(KvFormat::q4_0, block, 0), 0x3800);  // 0.5
  double back[32];
  ASSERT_TRUE(decode_row(KvFormat::q4_0, DType::f32, block, 32, RowScale{}, back).finite());
  EXPECT_EQ(back[0], -4.0);
  EXPECT_EQ(back[1], 3.5);
  EXPECT_EQ(back[2], 0.0);
  EXPECT_EQ(back[16], 2.0);   // 4 + 8.5 = 12.5: nibble 12
  EXPECT_EQ(back[17], 1.5);   // 2.5 + 8.5 = 11: nibble 11 (ties to even: 10)
  EXPECT_EQ(back[18], -1.0);  // -2.5 + 8.5 = 6: nibble 6 (away from zero: 5)
  EXPECT_EQ(block[2] >> 4, 12);  // channel 16: qs[0]'s high nibble
  // The largest magnitude positive: d negative.
  x.assign(32, 1.0);
  x[5] = 8.0;
  ASSERT_EQ(encode_row(KvFormat::q4_0, DType::f32, x.data(), 32, RowScale{}, block), "");
  EXPECT_EQ(get_block_d(KvFormat::q4_0, block, 0), 0xBC00);  // -1
  ASSERT_TRUE(decode_row(KvFormat::q4_0, DType::f32, block, 32, RowScale{}, back).finite());
  EXPECT_EQ(back[5], 8.0);
  EXPECT_EQ(back[0], 1.0);
}

// A block so small that 1 / d overflows binary32 (d < 2^-128, stored as binary16 0): the values
// decode to 0 and the codes are the code of 0. Catches inf * x (or 0 * inf = NaN) converted
// to an integer, undefined in C++, which on x86 gave Q4_0 nibble 0 rather than 8.
TEST(KvEncode, BlocksTooSmallForTheirInverse) {
  for (KvFormat f : {KvFormat::q8_0, KvFormat::q4_0}) {
    std::vector<double> x(32, 0.0);
    x[3] = 1e-40;  // a binary32 subnormal: d = 1e-40 / 127 or / -8, 1 / d past FLT_MAX
    x[9] = -3e-41;
    uint8_t block[34];
    ASSERT_EQ(encode_row(f, DType::f32, x.data(), 32, RowScale{}, block), "") << kv_format_name(f);
    double back[32];
    ASSERT_TRUE(decode_row(f, DType::f32, block, 32, RowScale{}, back).finite());
    for (int j = 0; j < 32; ++j) {
      EXPECT_EQ(back[j], 0.0) << kv_format_name(f) << j;
      EXPECT_EQ(code_value(f, get_code(f, block, j)), 0.0) << kv_format_name(f) << j;
    }
  }
}

// What the spec keeps out of live elements is refused, naming the channel: NaN, infinity, fp8
// past its range, a scale that is not > 0, a block whose d overflows binary16.
TEST(KvEncode, RefusalsNameTheChannel) {
  const float one = 1.0f, zero = 0.0f;
  const double x[3] = {1.0, 500.0, NAN};
  uint8_t units[68];
  EXPECT_NE(encode_row(KvFormat::fp8_e4m3, DType::f32, x, 2, RowScale{&one, 0}, units).find("channel 1"),
            std::string::npos);
  EXPECT_EQ(encode_row(KvFormat::fp8_e5m2, DType::f32, x, 2, RowScale{&one, 0}, units), "");
  EXPECT_NE(encode_row(KvFormat::int8, DType::f32, x, 3, RowScale{&one, 0}, units).find("channel 2"),
            std::string::npos);
  EXPECT_NE(encode_row(KvFormat::int8, DType::f32, x, 1, RowScale{&zero, 0}, units).find("scale"),
            std::string::npos);
  std::vector<double> big(32, 1.0);
  big[7] = 127.0 * 70000;  // d = 70000 > 65504
  EXPECT_NE(encode_row(KvFormat::q8_0, DType::f32, big.data(), 32, RowScale{}, units).find("block 0"),
            std::string::npos);
  EXPECT_NE(encode_row(KvFormat::dtype, DType::f16, x + 2, 1, RowScale{}, units), "");
}

}  // namespace
}  // namespace attncheck
