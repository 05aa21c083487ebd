// Version 3's stored K/V formats decoded (src/problem/kv_codes.h, kv_decode.h; docs/kv-formats.md):
// each test names the plausible mistake it catches.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "problem/kv_codes.h"
#include "problem/kv_decode.h"
#include "problem/kv_format.h"
#include "problem/kv_scale.h"

namespace attncheck {
namespace {

// The e4m3fn value of a code derived apart from the library: normal codes as binary32 bit
// fields (exponent rebiased from 7 to 127, mantissa moved up 20 bits), subnormals m / 512.
double e4m3_reference(uint32_t code) {
  const uint32_t s = code >> 7, e = (code >> 3) & 15u, m = code & 7u;
  if (e == 15 && m == 7) return NAN;
  float f;
  if (e == 0) {
    f = static_cast<float>(m) / 512.0f;
  } else {
    const uint32_t bits = ((e - 7 + 127) << 23) | (m << 20);
    std::memcpy(&f, &bits, 4);
  }
  return s ? -static_cast<double>(f) : static_cast<double>(f);
}

// The same for e5m2: exponent rebiased from 15, mantissa moved up 21 bits, subnormals m / 65536.
double e5m2_reference(uint32_t code) {
  const uint32_t s = code >> 7, e = (code >> 2) & 31u, m = code & 3u;
  double v;
  if (e == 31) {
    v = m == 0 ? INFINITY : NAN;
  } else if (e == 0) {
    v = static_cast<double>(m) / 65536.0;
  } else {
    const uint32_t bits = ((e - 15 + 127) << 23) | (m << 21);
    float f;
    std::memcpy(&f, &bits, 4);
    v = f;
  }
  return s ? -v : v;
}

void expect_same_value(double got, double want, uint32_t code) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << "code 0x" << std::hex << code;
  } else {
    EXPECT_EQ(got, want) << "code 0x" << std::hex << code;
    EXPECT_EQ(std::signbit(got), std::signbit(want)) << "code 0x" << std::hex << code;
  }
}

// The values are the ABI's (plugin-abi-v3.md's enum), the units the spec's table. Catches a row
// out of order (a format sent as another) and a wrong block size or channel count.
TEST(KvFormat, RowsFollowTheSpec) {
  const int abi[] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  const char* names[] = {"dtype", "f16", "bf16", "fp8_e4m3", "fp8_e5m2", "int8", "int4", "q8_0", "q4_0"};
  const int64_t bytes[] = {0, 2, 2, 1, 1, 1, 1, 34, 18}, channels[] = {1, 1, 1, 1, 1, 1, 2, 32, 32};
  ASSERT_EQ(all_kv_formats().size(), 9u);
  for (int i = 0; i < 9; ++i) {
    const KvFormatInfo& r = all_kv_formats()[i];
    EXPECT_EQ(static_cast<int>(r.format), abi[i]);
    EXPECT_EQ(r.name, names[i]);
    EXPECT_EQ(r.unit_bytes, bytes[i]) << names[i];
    EXPECT_EQ(r.unit_channels, channels[i]) << names[i];
    EXPECT_EQ(kv_format_from_name(names[i]), r.format);
    EXPECT_EQ(find_kv_format(abi[i]), &r);
  }
  EXPECT_EQ(find_kv_format(9), nullptr);
  EXPECT_TRUE(info(KvFormat::int4).scaled && info(KvFormat::fp8_e5m2).scaled && !info(KvFormat::q8_0).scaled);
  EXPECT_TRUE(info(KvFormat::q4_0).block_scaled && !info(KvFormat::int8).block_scaled);
  EXPECT_EQ(info(KvFormat::q4_0).working, DType::f16);
  EXPECT_EQ(info(KvFormat::bf16).working, DType::bf16);
  EXPECT_FALSE(info(KvFormat::fp8_e4m3).working.has_value());
  EXPECT_EQ(kv_unit_bytes(KvFormat::dtype, DType::bf16), 2);
  EXPECT_EQ(kv_row_units(KvFormat::q8_0, 576), 18);
  EXPECT_EQ(kv_row_units(KvFormat::int4, 64), 32);
  EXPECT_FALSE(kv_channels_fit(KvFormat::int4, 63));
  EXPECT_FALSE(kv_channels_fit(KvFormat::q4_0, 48));
  EXPECT_TRUE(kv_channels_fit(KvFormat::q4_0, 64));
}

// F16/BF16 storage only under an F32 call; F64 only with DTYPE. Catches a rule read backwards.
TEST(KvFormat, DtypesEachFormatComesWith) {
  EXPECT_TRUE(kv_format_allows(KvFormat::f16, DType::f32));
  EXPECT_FALSE(kv_format_allows(KvFormat::f16, DType::f16));
  EXPECT_FALSE(kv_format_allows(KvFormat::bf16, DType::bf16));
  EXPECT_TRUE(kv_format_allows(KvFormat::fp8_e4m3, DType::bf16));
  EXPECT_TRUE(kv_format_allows(KvFormat::q4_0, DType::f16));
  EXPECT_FALSE(kv_format_allows(KvFormat::q8_0, DType::f64));
  EXPECT_TRUE(kv_format_allows(KvFormat::dtype, DType::f64));
}

// Every e4m3 code against the bit-field derivation, and the spec's landmarks. Catches FNUZ's
// bias 8 (every value halved), 0x7F read as 480 or infinity, subnormals flushed to zero or read
// as (1 + m/8) * 2^-6, and -0 read as +0.
TEST(KvDecode, EveryE4M3Code) {
  for (uint32_t code = 0; code < 256; ++code)
    expect_same_value(code_value(KvFormat::fp8_e4m3, code), e4m3_reference(code), code);
  EXPECT_EQ(code_value(KvFormat::fp8_e4m3, 0x7E), 448.0);
  EXPECT_EQ(code_value(KvFormat::fp8_e4m3, 0xFE), -448.0);
  EXPECT_EQ(code_value(KvFormat::fp8_e4m3, 0x01), std::ldexp(1.0, -9));   // smallest subnormal
  EXPECT_EQ(code_value(KvFormat::fp8_e4m3, 0x07), 7 * std::ldexp(1.0, -9));
  EXPECT_EQ(code_value(KvFormat::fp8_e4m3, 0x08), std::ldexp(1.0, -6));   // smallest normal
  EXPECT_EQ(code_value(KvFormat::fp8_e4m3, 0x38), 1.0);
  EXPECT_TRUE(std::isnan(code_value(KvFormat::fp8_e4m3, 0x7F)));
  EXPECT_TRUE(std::isnan(code_value(KvFormat::fp8_e4m3, 0xFF)));
  EXPECT_TRUE(std::signbit(code_value(KvFormat::fp8_e4m3, 0x80)));
  EXPECT_EQ(code_value(KvFormat::fp8_e4m3, 0x78), 256.0);  // e = 15, m = 0: finite (no infinities)
}

// Every e5m2 code likewise. Catches bias 16 (FNUZ), 0x7C read as a number, infinities read as
// NaN, and subnormals lost.
TEST(KvDecode, EveryE5M2Code) {
  for (uint32_t code = 0; code < 256; ++code)
    expect_same_value(code_value(KvFormat::fp8_e5m2, code), e5m2_reference(code), code);
  EXPECT_EQ(code_value(KvFormat::fp8_e5m2, 0x7B), 57344.0);
  EXPECT_EQ(code_value(KvFormat::fp8_e5m2, 0x01), std::ldexp(1.0, -16));
  EXPECT_EQ(code_value(KvFormat::fp8_e5m2, 0x04), std::ldexp(1.0, -14));
  EXPECT_EQ(code_value(KvFormat::fp8_e5m2, 0x3C), 1.0);
  EXPECT_EQ(code_value(KvFormat::fp8_e5m2, 0x7C), INFINITY);
  EXPECT_EQ(code_value(KvFormat::fp8_e5m2, 0xFC), -INFINITY);
  for (uint32_t code : {0x7Du, 0x7Eu, 0x7Fu, 0xFDu, 0xFEu, 0xFFu})
    EXPECT_TRUE(std::isnan(code_value(KvFormat::fp8_e5m2, code))) << code;
}

// The integer codes: INT8 and Q8_0 signed bytes, INT4 and Q4_0 nibble - 8. Catches unsigned
// bytes (0x80 as 128) and nibbles without the offset.
TEST(KvDecode, IntegerCodes) {
  EXPECT_EQ(code_value(KvFormat::int8, 0x80), -128.0);
  EXPECT_EQ(code_value(KvFormat::q8_0, 0xFF), -1.0);
  EXPECT_EQ(code_value(KvFormat::int8, 0x7F), 127.0);
  EXPECT_EQ(code_value(KvFormat::int4, 0x0), -8.0);
  EXPECT_EQ(code_value(KvFormat::q4_0, 0xF), 7.0);
  EXPECT_EQ(code_value(KvFormat::int4, 0x8), 0.0);
}

// INT4's pairs: byte m holds channel 2m low and 2m+1 high, real (nibble - 8) * scale. Catches
// the nibbles swapped and Q4_0's halves used for INT4 (checked to differ below).
TEST(KvDecode, Int4PairsLowNibbleFirst) {
  uint8_t row[8];
  for (int m = 0; m < 8; ++m) row[m] = static_cast<uint8_t>(m | ((15 - m) << 4));
  const float scale = 0.25f;
  double got[16];
  ASSERT_TRUE(decode_row(KvFormat::int4, DType::f32, row, 16, RowScale{&scale, 0}, got).finite());
  std::vector<double> want(16), halves(16);
  for (int m = 0; m < 8; ++m) {
    want[2 * m] = (m - 8) * 0.25;
    want[2 * m + 1] = (15 - m - 8) * 0.25;
    halves[m] = (m - 8) * 0.25;  // what a decoder with Q4_0's order would read
    halves[8 + m] = (15 - m - 8) * 0.25;
  }
  EXPECT_EQ(std::vector<double>(got, got + 16), want);
  EXPECT_NE(halves, want);  // the test tells the two orders apart
}

// Two Q8_0 blocks of 34 bytes, each with its own d. Catches a 32-byte block stride, d taken
// from the first block for all, qs read unsigned, and d's bytes read as binary32 or bfloat16.
TEST(KvDecode, Q8_0BlocksChannelByChannel) {
  uint8_t row[68];
  const uint16_t d0 = 0x3800, d1 = 0xC000;  // binary16 0.5 and -2
  std::memcpy(row, &d0, 2);
  std::memcpy(row + 34, &d1, 2);
  for (int j = 0; j < 32; ++j) {
    row[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
    row[36 + j] = static_cast<uint8_t>(static_cast<int8_t>(j == 0 ? -128 : 3 * j));
  }
  double got[64];
  ASSERT_TRUE(decode_row(KvFormat::q8_0, DType::f32, row, 64, RowScale{}, got).finite());
  for (int j = 0; j < 32; ++j) {
    EXPECT_EQ(got[j], (j - 16) * 0.5) << j;
    EXPECT_EQ(got[32 + j], (j == 0 ? -128 : 3 * j) * -2.0) << 32 + j;
    EXPECT_EQ(decode_channel(KvFormat::q8_0, DType::f32, row, 32 + j, RowScale{}), got[32 + j]);
  }
}

// Q4_0's halves: channel 32m+j is qs[j]'s low nibble, 32m+16+j its high one. The block is built
// so that the interleaved order (INT4's pairs) reads other values, and that is checked too.
// Catches pairs for halves, the halves swapped, and d ignored on the second block.
TEST(KvDecode, Q4_0HalvesNotInterleaved) {
  uint8_t row[36];
  const uint16_t d0 = 0x3C00, d1 = 0xBC00;  // 1 and -1
  std::memcpy(row, &d0, 2);
  std::memcpy(row + 18, &d1, 2);
  for (int j = 0; j < 16; ++j) {
    row[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    row[20 + j] = static_cast<uint8_t>(((j + 3) & 15) | (j << 4));
  }
  double got[64];
  ASSERT_TRUE(decode_row(KvFormat::q4_0, DType::bf16, row, 64, RowScale{}, got).finite());
  std::vector<double> want(64), interleaved(64);
  for (int j = 0; j < 16; ++j) {
    want[j] = j - 8;
    want[16 + j] = 15 - j - 8;
    want[32 + j] = -(((j + 3) & 15) - 8);
    want[48 + j] = -(j - 8);
    interleaved[2 * j] = j - 8;  // an INT4-style reading of block 0
    interleaved[2 * j + 1] = 15 - j - 8;
  }
  EXPECT_EQ(std::vector<double>(got, got + 64), want);
  EXPECT_NE(std::vector<double>(interleaved.begin(), interleaved.begin() + 32),
            std::vector<double>(want.begin(), want.begin() + 32));
}

// decode_row (a row at a time, through the code tables) and decode_channel (one channel, through
// code_value) agree on random bytes, NaN and infinity codes and NaN d included, with a
// per-channel scale. Catches the row loop's scale or d applied to the wrong channels, a block
// loop that stops early, and the 16-bit formats decoded as the call's dtype.
TEST(KvDecode, RowEqualsChannelByChannel) {
  std::mt19937 rng(20261206);
  std::vector<float> scales(64);
  for (std::size_t c = 0; c < scales.size(); ++c) scales[c] = std::ldexp(1.0f + c / 64.0f, static_cast<int>(c % 7) - 3);
  for (const KvFormatInfo& r : all_kv_formats()) {
    const int64_t channels = 64;
    for (DType dtype : {DType::f32, DType::bf16}) {
      std::vector<uint8_t> row(static_cast<std::size_t>(kv_row_units(r.format, channels) * kv_unit_bytes(r.format, dtype)));
      for (int trial = 0; trial < 20; ++trial) {
        for (uint8_t& b : row) b = static_cast<uint8_t>(rng());
        const RowScale scale{scales.data(), 1};
        double got[64];
        const DecodedRow d = decode_row(r.format, dtype, row.data(), channels, scale, got);
        int64_t non_finite = 0;
        for (int64_t c = 0; c < channels; ++c) {
          const double want = decode_channel(r.format, dtype, row.data(), c, scale);
          non_finite += !std::isfinite(want);
          if (std::isnan(want))
            EXPECT_TRUE(std::isnan(got[c])) << r.name << " channel " << c;
          else
            EXPECT_EQ(got[c], want) << r.name << " channel " << c;
        }
        EXPECT_EQ(d.non_finite, non_finite) << r.name;
      }
    }
  }
}

// put_code writes where get_code reads, and only there (a nibble's neighbour is kept).
// Catches a put that clears the other nibble of INT4's or Q4_0's byte, or writes into d.
TEST(KvCodes, PutThenGetEveryChannel) {
  for (KvFormat f : {KvFormat::f16, KvFormat::fp8_e5m2, KvFormat::int8, KvFormat::int4, KvFormat::q8_0,
                     KvFormat::q4_0}) {
    const int64_t channels = 64;
    std::vector<uint8_t> row(kv_row_units(f, channels) * info(f).unit_bytes, 0);
    if (info(f).block_scaled) {
      put_block_d(f, row.data(), 0, 0x1234);
      put_block_d(f, row.data(), 1, 0x4321);
    }
    const uint32_t mask = (1u << info(f).code_bits) - 1;
    for (int64_t c = 0; c < channels; ++c) put_code(f, row.data(), c, static_cast<uint32_t>(c * 37 + 5) & mask);
    for (int64_t c = 0; c < channels; ++c)
      EXPECT_EQ(get_code(f, row.data(), c), static_cast<uint32_t>(c * 37 + 5) & mask) << kv_format_name(f) << c;
    if (info(f).block_scaled) {
      EXPECT_EQ(get_block_d(f, row.data(), 0), 0x1234);
      EXPECT_EQ(get_block_d(f, row.data(), 1), 0x4321);
    }
  }
}

// finite_code enumerates each finite code once, nothing else, and starts at +0. Catches an
// off-by-one that drops the largest finite code (0x7E, 448) or takes a NaN code in.
TEST(KvCodes, FiniteCodesEachOnce) {
  for (KvFormat f : {KvFormat::f16, KvFormat::bf16, KvFormat::fp8_e4m3, KvFormat::fp8_e5m2, KvFormat::int8,
                     KvFormat::int4, KvFormat::q8_0, KvFormat::q4_0}) {
    int64_t finite = 0;
    for (uint32_t code = 0; code < (1u << info(f).code_bits); ++code) finite += code_is_finite(f, code);
    ASSERT_EQ(finite_code_count(f), finite) << kv_format_name(f);
    std::set<uint32_t> seen;
    for (int64_t i = 0; i < finite; ++i) {
      const uint32_t code = finite_code(f, i);
      EXPECT_TRUE(code_is_finite(f, code)) << kv_format_name(f) << " index " << i;
      seen.insert(code);
    }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), finite) << kv_format_name(f);
    const double zero = code_value(f, finite_code(f, 0));
    EXPECT_TRUE(zero == 0 && !std::signbit(zero)) << kv_format_name(f);
  }
}

// NaN and infinity codes are reported, never turned into numbers: e4m3 0x7F in a live channel,
// e5m2's infinity, a Q8_0 block whose d is NaN (every one of its channels, zero codes included).
TEST(KvDecode, NonFiniteCodesReported) {
  const float one = 1.0f;
  uint8_t e4m3[8] = {0x38, 0x38, 0x7F, 0x38, 0x38, 0xFF, 0x38, 0x38};
  double got[64];
  DecodedRow r = decode_row(KvFormat::fp8_e4m3, DType::f16, e4m3, 8, RowScale{&one, 0}, got);
  EXPECT_EQ(r.non_finite, 2);
  EXPECT_EQ(r.first_non_finite, 2);
  EXPECT_TRUE(std::isnan(got[2]));
  uint8_t e5m2[4] = {0x3C, 0x3C, 0x3C, 0xFC};
  r = decode_row(KvFormat::fp8_e5m2, DType::f32, e5m2, 4, RowScale{&one, 0}, got);
  EXPECT_EQ(r.first_non_finite, 3);
  EXPECT_EQ(got[3], -INFINITY);
  uint8_t q8[68] = {};
  const uint16_t nan_d = 0x7E00, one_d = 0x3C00;
  std::memcpy(q8, &one_d, 2);
  std::memcpy(q8 + 34, &nan_d, 2);
  r = decode_row(KvFormat::q8_0, DType::f32, q8, 64, RowScale{}, got);
  EXPECT_EQ(r.non_finite, 32);
  EXPECT_EQ(r.first_non_finite, 32);
}

// The four granularities of the spec's scale table, each through a view, with every scale a
// distinct power of two so the value read names the scale used. Expected indices are written
// out per granularity. Catches strides swapped (per (kv head, channel) read as (channel, kv
// head)), a per-(batch, kv head) scale indexed by the page rather than the sequence, and a
// scale applied to the wrong format (unscaled codes times a scale).
TEST(KvScale, FourGranularitiesThroughAView) {
  const int64_t batch = 2, kv_heads = 3, channels = 4, pages = 3;
  std::vector<uint8_t> pool(pages * kv_heads * channels, 1);  // INT8 code 1 everywhere: the value is the scale
  std::vector<float> data(batch * kv_heads * channels);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::ldexp(1.0f, static_cast<int>(i) - 8);
  for (ScaleGranularity g : kScaleGranularities) {
    const auto s = scale_strides(g, kv_heads, channels);
    KvView v{pool.data(), KvFormat::int8, DType::f16, {kv_heads * channels, channels, 0, 1},
             KvScale{data.data(), {s[0], s[1], s[2]}}};
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < kv_heads; ++h) {
        const int64_t page = pages - 1 - b;  // the row of sequence b lives on another page
        double got[4];
        ASSERT_TRUE(decode_view_row(v, b, page, h, 0, channels, got).finite());
        for (int64_t c = 0; c < channels; ++c) {
          int64_t want = 0;
          switch (g) {
            case ScaleGranularity::per_tensor: want = 0; break;
            case ScaleGranularity::per_kv_head: want = h; break;
            case ScaleGranularity::per_batch_kv_head: want = b * kv_heads + h; break;
            case ScaleGranularity::per_kv_head_channel: want = h * channels + c; break;
          }
          EXPECT_EQ(got[c], data[want]) << scale_granularity_name(g) << " b" << b << " h" << h << " c" << c;
          EXPECT_EQ(scale_at(v.scale, b, h, c), data[want]);
        }
      }
    EXPECT_LE(scale_count(g, batch, kv_heads, channels), static_cast<int64_t>(data.size()));
  }
  EXPECT_EQ(scale_count(ScaleGranularity::per_batch_kv_head, batch, kv_heads, channels), 6);
  EXPECT_EQ(scale_count(ScaleGranularity::per_kv_head_channel, batch, kv_heads, channels), 12);
  // An unscaled format ignores a scale it is handed.
  const uint16_t f16_one = 0x3C00;
  EXPECT_EQ(decode_channel(KvFormat::f16, DType::f32, reinterpret_cast<const uint8_t*>(&f16_one), 0,
                           RowScale{data.data(), 1}),
            1.0);
}

// A view's strides count units: elements of the dtype for DTYPE, 34-byte blocks for Q8_0.
// Catches strides read as bytes or as channels, and DTYPE's unit taken as the table's 0 bytes.
TEST(KvDecode, ViewsCountStridesInUnits) {
  // DTYPE under an f16 call: [2 rows][3 elements], rows 4 elements apart (a gap of one).
  const uint16_t f16[8] = {0x3C00, 0x4000, 0x4200, 0x7E00, 0x4400, 0x4500, 0x4600, 0x7E00};  // 1 2 3 NaN 4 5 6 NaN
  KvView d{reinterpret_cast<const uint8_t*>(f16), KvFormat::dtype, DType::f16, {0, 0, 4, 1}, {}};
  double got[64];
  ASSERT_TRUE(decode_view_row(d, 0, 0, 0, 1, 3, got).finite());
  EXPECT_EQ(std::vector<double>(got, got + 3), (std::vector<double>{4, 5, 6}));
  // Q8_0: kv head h's row at 2 blocks (64 channels) per head, 3 heads.
  std::vector<uint8_t> pool(6 * 34, 0);
  for (int h = 0; h < 3; ++h) {
    const uint16_t d_bits = static_cast<uint16_t>(0x3C00 + 0x400 * h);  // 1, 2, 4
    put_block_d(KvFormat::q8_0, pool.data() + h * 68, 0, d_bits);
    put_block_d(KvFormat::q8_0, pool.data() + h * 68, 1, d_bits);
    for (int c = 0; c < 64; ++c) put_code(KvFormat::q8_0, pool.data() + h * 68, c, static_cast<uint32_t>(c));
  }
  KvView q{pool.data(), KvFormat::q8_0, DType::f32, {0, 2, 0, 1}, {}};
  ASSERT_TRUE(decode_view_row(q, 0, 0, 2, 0, 64, got).finite());
  for (int c = 0; c < 64; ++c) EXPECT_EQ(got[c], 4.0 * c) << c;
}

// A scale that is not finite and > 0, and a negative stride, are named; good ones pass.
TEST(KvScale, InconsistencyNamesTheScale) {
  std::vector<float> data(12, 1.0f);
  KvScale s{data.data(), {0, 4, 1}};
  EXPECT_EQ(scale_inconsistency(s, 2, 3, 4), "");
  data[2 * 4 + 3] = 0.0f;
  EXPECT_NE(scale_inconsistency(s, 2, 3, 4).find("kv head 2, channel 3"), std::string::npos)
      << scale_inconsistency(s, 2, 3, 4);
  data[2 * 4 + 3] = 1.0f;
  s.stride[0] = -1;
  EXPECT_NE(scale_inconsistency(s, 2, 3, 4).find("stride[0]"), std::string::npos);
}

}  // namespace
}  // namespace attncheck
