// online's float exp (src/impls/online_exp.h): within 0.51 float ulps of
// exp on every float argument tried, in every build of the loops this CPU
// runs (vector_isa.h), where the oracle's bound allows an implementation 2
// (kLibmExpUlps); -inf, NaN, overflow and the subnormal range as libm has them.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "impls/online_exp.h"
#include "parallel/vector_isa.h"

namespace attncheck {
namespace {

using online_tiles::kKeyTile;

void exp_baseline(float* s, float m) { online_tiles::tile_exp(s, m); }
ATTNCHECK_ISA_AVX2 void exp_avx2(float* s, float m) { online_tiles::tile_exp(s, m); }
ATTNCHECK_ISA_AVX512 void exp_avx512(float* s, float m) { online_tiles::tile_exp(s, m); }

using ExpFn = void (*)(float*, float);

std::vector<std::pair<const char*, ExpFn>> builds() {
  std::vector<std::pair<const char*, ExpFn>> out{{"baseline", exp_baseline}};
  if (detected_vector_isa() >= VectorIsa::avx2) out.push_back({"avx2", exp_avx2});
  if (detected_vector_isa() >= VectorIsa::avx512) out.push_back({"avx512", exp_avx512});
  return out;
}

// |y - exp(x)| in ulps of float at exp(x) (subnormal results: ulps of 2^-149).
double ulp_error(float x, float y) {
  const long double want = std::exp(static_cast<long double>(x));
  int e = 0;
  std::frexp(static_cast<double>(want), &e);  // want in [2^(e-1), 2^e)
  const long double ulp = std::ldexp(1.0L, std::max(e - 24, -149));
  return static_cast<double>(std::fabs(static_cast<long double>(y) - want) / ulp);
}

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

TEST(OnlineExp, WithinHalfAnUlpAndABitOnEveryBuild) {
  // Every 61st negative float from -0 to -104 (past which exp rounds to 0):
  // 18 million arguments, every binade, normal and subnormal results.
  std::vector<float> args;
  const uint32_t last = std::bit_cast<uint32_t>(-104.0f);
  for (uint32_t bits = 0x80000000u; bits <= last; bits += 61) args.push_back(from_bits(bits));
  for (float x : {-0.0f, -1e-45f, -0.34657359f, -0.34657362f, -87.336544f, -87.33655f, -103.27893f, -103.97208f})
    args.push_back(x);
  while (args.size() % kKeyTile) args.push_back(0.0f);
  for (const auto& [name, fn] : builds()) {
    SCOPED_TRACE(name);
    double worst = 0;
    std::vector<float> tile(kKeyTile);
    for (std::size_t t0 = 0; t0 < args.size(); t0 += kKeyTile) {
      std::copy(args.begin() + t0, args.begin() + t0 + kKeyTile, tile.begin());
      fn(tile.data(), 0.0f);
      for (int64_t jj = 0; jj < kKeyTile; ++jj) worst = std::max(worst, ulp_error(args[t0 + jj], tile[jj]));
    }
    std::printf("online exp (%s): largest error %.4f ulp over %zu arguments\n", name, worst, args.size());
    EXPECT_LE(worst, 0.51);
  }
}

TEST(OnlineExp, SubtractsTheMaxInFloatFirst) {
  // s - m rounds in float, as std::exp(s - m) takes it: here exactly, and
  // 1 - 2^-30 rounds to 1 (the weight of a logit 2^-30 below the max is 1).
  for (const auto& [name, fn] : builds()) {
    SCOPED_TRACE(name);
    std::vector<float> s(kKeyTile, 1.5f);
    s[1] = 1.0f - 0x1p-30f;
    fn(s.data(), 3.25f);
    EXPECT_LE(ulp_error(1.5f - 3.25f, s[0]), 0.51);
    std::vector<float> t(kKeyTile, 1.0f - 0x1p-30f);
    fn(t.data(), 1.0f);
    EXPECT_EQ(t[0], std::exp(static_cast<float>(1.0f - 0x1p-30f) - 1.0f));
  }
}

TEST(OnlineExp, SpecialValuesAsLibmHasThem) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const auto& [name, fn] : builds()) {
    SCOPED_TRACE(name);
    std::vector<float> s(kKeyTile, 0.0f);
    s[0] = -inf, s[1] = nan, s[2] = -200.0f, s[3] = 88.0f, s[4] = 89.0f, s[5] = inf, s[6] = 0.0f, s[7] = -1e30f;
    s[8] = -103.5f;  // a subnormal result
    fn(s.data(), 0.0f);
    EXPECT_EQ(s[0], 0.0f);
    EXPECT_TRUE(std::isnan(s[1]));
    EXPECT_EQ(s[2], 0.0f);
    EXPECT_LE(ulp_error(88.0f, s[3]), 0.51);
    EXPECT_EQ(s[4], inf);
    EXPECT_EQ(s[5], inf);
    EXPECT_EQ(s[6], 1.0f);
    EXPECT_EQ(s[7], 0.0f);
    EXPECT_GT(s[8], 0.0f);
    EXPECT_LT(s[8], std::numeric_limits<float>::min());
    EXPECT_LE(ulp_error(-103.5f, s[8]), 0.51);
    // inf - inf: the row's max is +inf and so is the logit: NaN, as std::exp has it.
    std::vector<float> t(kKeyTile, inf);
    fn(t.data(), inf);
    EXPECT_TRUE(std::isnan(t[0]));
  }
}

}  // namespace
}  // namespace attncheck
