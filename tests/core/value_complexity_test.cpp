// value_complexity orders a value by its significant bits, then its exponent,
// then its sign: shrinking keeps a candidate only when it is strictly simpler.
// Its bit count is read off the representation; here it is checked against the
// definition (the fewest leading bits whose truncation gives x back), on
// normals, subnormals and values with few bits, and the order it implies.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

#include "gen/generators.h"

namespace attncheck {
namespace {

// The definition, slowly: x truncated to b significant bits, for b = 1, 2, ...
int bits_by_definition(double x) {
  if (x == 0) return 1;
  int e = 0;
  const double m = std::frexp(x, &e);
  for (int b = 1; b < 64; ++b)
    if (std::ldexp(std::trunc(std::ldexp(m, b)), e - b) == x) return b;
  return 64;
}

// value_complexity's own formula with the definition's bit count.
int complexity_by_definition(double x) {
  int e = 0;
  std::frexp(x, &e);
  return 2 + 4000 * bits_by_definition(x) + 2 * std::min(std::abs(e - 1), 1999) + (std::signbit(x) ? 1 : 0);
}

TEST(ValueComplexity, MatchesTheDefinitionOnNormalsAndSubnormals) {
  std::mt19937_64 rng(20261202);
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    uint64_t u = rng();
    switch (i % 4) {
      case 1: u &= ~((uint64_t{1} << (rng() % 53)) - 1); break;  // few significant bits
      case 2: u &= 0x800fffffffffffffull; break;                   // subnormal
      case 3: u &= 0x800fffffffffffffull & ~((uint64_t{1} << (rng() % 52)) - 1); break;
      default: break;
    }
    const double x = std::bit_cast<double>(u);
    if (!std::isfinite(x) || x == 0) continue;
    ASSERT_EQ(value_complexity(x), complexity_by_definition(x)) << std::hexfloat << x;
    ++checked;
  }
  EXPECT_GT(checked, 190000);
  for (double x : {1.0, -1.0, 0.5, 3.0, 0.1, 5e-324, -5e-324, 0x1p-1022, 0x1.fffffffffffffp+1023})
    EXPECT_EQ(value_complexity(x), complexity_by_definition(x)) << std::hexfloat << x;
}

TEST(ValueComplexity, OrdersZeroFewBitsAndSpecials) {
  EXPECT_EQ(value_complexity(0.0), 0);
  EXPECT_EQ(value_complexity(-0.0), 1);
  EXPECT_LT(value_complexity(1.0), value_complexity(3.0));    // 1 bit < 2 bits
  EXPECT_LT(value_complexity(3.0), value_complexity(0.1));    // 2 bits < 53 bits
  EXPECT_LT(value_complexity(1.0), value_complexity(-1.0));   // the sign last
  EXPECT_LT(value_complexity(2.0), value_complexity(1024.0)); // then the exponent
  EXPECT_LT(value_complexity(0x1.fffffffffffffp+1023), value_complexity(INFINITY));
  EXPECT_LT(value_complexity(INFINITY), value_complexity(NAN));
}

TEST(ValueComplexity, EverySimplerValueIsStrictlySimpler) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  for (DType t : every_dtype())
    for (int i = 0; i < 2000; ++i) {
      const double x = round_to(t, normal(rng) * std::exp2(static_cast<double>(static_cast<int>(rng() % 40) - 20)));
      for (double y : simpler_values(x, t)) EXPECT_LT(value_complexity(y), value_complexity(x)) << x << " -> " << y;
    }
}

// What shrinking's whole-tensor step counts on without asking simpler_values:
// +0 has no simpler value, and every other value's simplest is +0.
TEST(ValueComplexity, PlusZeroIsTheSimplestOfEveryOtherValue) {
  for (DType t : every_dtype()) {
    EXPECT_TRUE(simpler_values(0.0, t).empty());
    for (double x : {-0.0, 1.0, -1.0, 0.1, 3.5, -7e-5, 65504.0, 1e-40, double(INFINITY), -double(INFINITY), double(NAN)}) {
      const double y = round_to(t, x);
      if (y == 0 && !std::signbit(y)) continue;  // 1e-40 in f16
      const std::vector<double> s = simpler_values(y, t);
      ASSERT_FALSE(s.empty()) << x;
      EXPECT_EQ(s.front(), 0.0) << x;
      EXPECT_FALSE(std::signbit(s.front())) << x;
    }
  }
}

}  // namespace
}  // namespace attncheck
