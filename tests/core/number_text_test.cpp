// Compared values in messages (problem/number_text.h): values that differ
// print differently in every dtype, values a dtype holds print with the
// shortest digits that read back as them, and the distance in ulps is the
// count of the dtype's steps between them. And the shrunk case's tensors,
// in decimal (Problem::describe).
#include "problem/number_text.h"
#include "problem/problem.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>

namespace attncheck {
namespace {

// The value of t just above x (x finite, below t's largest).
double next_up(DType t, double x) {
  // Half an ulp of t above x, rounded to t, is x or its neighbour; a step of
  // a tenth of the smallest gap covers both the subnormal and normal spacing.
  const double ulp = std::max(min_subnormal(t), std::abs(x) * 2 * unit_roundoff(t));
  for (double step = ulp / 4;; step *= 2) {
    const double y = round_to(t, x + step);
    if (y > x) return y;
  }
}

double read(const std::string& s) { return std::strtod(s.c_str(), nullptr); }

TEST(NumberText, NeighboursInEveryDTypeLookDifferentAndAreOneUlpApart) {
  for (DType t : every_dtype()) {
    for (double x : {1.0, 0.1, -3.75, 1000.0, 1e-3, 0.7071067811865476}) {
      const double a = round_to(t, x), b = next_up(t, a);
      const PairText p = pair_text(a, b, t);
      EXPECT_NE(p.a, p.b) << dtype_name(t) << " " << x;
      // Each text reads back as its own value of the dtype.
      EXPECT_EQ(round_to(t, read(p.a)), a) << dtype_name(t) << " " << p.a;
      EXPECT_EQ(round_to(t, read(p.b)), b) << dtype_name(t) << " " << p.b;
      ASSERT_TRUE(ulp_distance(a, b, t).has_value());
      EXPECT_EQ(*ulp_distance(a, b, t), 1.0) << dtype_name(t) << " " << p.a << " " << p.b;
      EXPECT_EQ(difference_text(a, b, t), "1 ulp (" + std::string(dtype_name(t)) + ")");
    }
  }
}

TEST(NumberText, ShortestDigitsOfTheDType) {
  EXPECT_EQ(shortest_text(1.0, DType::f32), "1");
  EXPECT_EQ(shortest_text(round_to(DType::f32, 0.1), DType::f32), "0.1");
  EXPECT_EQ(shortest_text(0.1, DType::f64), "0.1");
  EXPECT_EQ(shortest_text(1.0 + std::ldexp(1.0, -10), DType::f16), "1.001");  // 1.0009765625
  EXPECT_EQ(shortest_text(1.0 + std::ldexp(1.0, -7), DType::bf16), "1.01");   // 1.0078125: 1.01 is nearer it than 1.015625
  EXPECT_EQ(shortest_text(65504, DType::f16), "65504");                      // not 6.5504e+04
  EXPECT_EQ(shortest_text(round_to(DType::f32, 1.00095367), DType::f32), "1.0009537");
}

TEST(NumberText, TheIssuesExamplesNoLongerPrintAlike) {
  // "sum to 1, not 1": a sum of f32 weights one ulp below 1.
  const double below_one = 1.0 - std::ldexp(1.0, -24);
  PairText p = pair_text(below_one, 1.0, DType::f32);
  EXPECT_EQ(p.a, "0.99999994");
  EXPECT_EQ(p.b, "1");
  // "got 1.00095, oracle 1.00095": an f32 output beside the oracle's double.
  const double got = round_to(DType::f32, 1.0009537), exact = 1.0009531;
  EXPECT_EQ(compared_values("got", got, "oracle", exact, DType::f32, 4e-7),
            "got 1.0009537, oracle 1.0009531: 4.8 ulp (f32), 1.4x the allowed difference 4e-07");
  // "default scale = 0.75, explicit scale = 0.75": two f64 outputs 3 ulp apart.
  const double x = 0.75, y = std::nextafter(std::nextafter(std::nextafter(0.75, 1.0), 1.0), 1.0);
  p = pair_text(x, y, DType::f64);
  EXPECT_EQ(p.a, "0.75");
  EXPECT_EQ(p.b, "0.7500000000000003");
  EXPECT_EQ(*ulp_distance(x, y, DType::f64), 3.0);
  // Two values the dtype does not hold (a double sum, the oracle's exact):
  // as many digits as tell them apart, six at least.
  p = pair_text(0.94025100001, 0.94025100004, DType::f32);
  EXPECT_EQ(p.a, "0.94025100001");
  EXPECT_EQ(p.b, "0.94025100004");
  EXPECT_EQ(pair_text(0.5, 0.25, DType::f16).a, "0.5");
}

TEST(NumberText, ValuesThatDifferAtSixDigitsKeepSix) {
  // No seventeen-digit noise where six digits already tell them apart.
  PairText p = pair_text(0.2689414213699951, 0.33023845067334306, DType::f64);
  EXPECT_EQ(p.a, "0.268941");
  EXPECT_EQ(p.b, "0.330238");
  // Quantities of no dtype (an entropy): six, then more while alike.
  p = pair_text(0.69314718, 0.69314729);
  EXPECT_EQ(p.a, "0.6931472");
  EXPECT_EQ(p.b, "0.6931473");
  p = pair_text(std::log(2.0), std::log(2.0));
  EXPECT_EQ(p.a, "0.693147");
  EXPECT_EQ(p.b, "0.693147");
}

TEST(NumberText, EqualValuesPrintTheSameAndAreNoUlpApart) {
  for (DType t : every_dtype()) {
    const double x = round_to(t, 0.3);
    const PairText p = pair_text(x, x, t);
    EXPECT_EQ(p.a, p.b);
    EXPECT_EQ(*ulp_distance(x, x, t), 0.0);
    EXPECT_EQ(difference_text(x, x, t), "0 ulp (" + std::string(dtype_name(t)) + ")");
  }
}

TEST(NumberText, NaNAndInfinitiesHaveNoUlpDistance) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(shortest_text(nan, DType::f32), "NaN");
  EXPECT_EQ(shortest_text(-nan, DType::f32), "NaN");  // not "-nan"
  EXPECT_EQ(shortest_text(inf, DType::f16), "inf");
  EXPECT_EQ(shortest_text(-inf, DType::f16), "-inf");
  EXPECT_FALSE(ulp_distance(nan, 1.0, DType::f32).has_value());
  EXPECT_FALSE(ulp_distance(1.0, inf, DType::f32).has_value());
  EXPECT_EQ(compared_values("got", nan, "oracle", 1.0, DType::f32), "got NaN, oracle 1");
  EXPECT_EQ(compared_values("got", inf, "oracle", 1.0, DType::f32, 0.5), "got inf, oracle 1: allowed difference 0.5");
  const PairText p = pair_text(nan, nan, DType::f64);
  EXPECT_EQ(p.a, p.b);
}

TEST(NumberText, NegativeZeroIsShownButIsNoUlpFromZero) {
  const PairText p = pair_text(-0.0, 0.0, DType::f32);
  EXPECT_EQ(p.a, "-0");
  EXPECT_EQ(p.b, "0");
  EXPECT_EQ(*ulp_distance(-0.0, 0.0, DType::f32), 0.0);
  // The smallest values of either sign are two steps apart, through zero.
  const double s = min_subnormal(DType::f16);
  EXPECT_EQ(*ulp_distance(-s, s, DType::f16), 2.0);
}

TEST(NumberText, SubnormalsCountTheirEvenSteps) {
  for (DType t : every_dtype()) {
    const double s = min_subnormal(t);
    EXPECT_EQ(*ulp_distance(s, 2 * s, t), 1.0) << dtype_name(t);
    EXPECT_EQ(*ulp_distance(0.0, 5 * s, t), 5.0) << dtype_name(t);
    // The largest subnormal and the smallest normal are neighbours.
    const double largest_subnormal = min_normal(t) - s;
    EXPECT_EQ(*ulp_distance(largest_subnormal, min_normal(t), t), 1.0) << dtype_name(t);
    const PairText p = pair_text(largest_subnormal, min_normal(t), t);
    EXPECT_NE(p.a, p.b) << dtype_name(t);
    EXPECT_EQ(round_to(t, read(p.a)), largest_subnormal) << dtype_name(t) << " " << p.a;
  }
}

TEST(NumberText, AcrossBinadesTheStepsAddUp) {
  // f16 holds 1024 values in [1, 2) and 1024 in [2, 4): from 1 to 4 is 2048 steps.
  EXPECT_EQ(*ulp_distance(1.0, 4.0, DType::f16), 2048.0);
  // bf16: 128 a binade.
  EXPECT_EQ(*ulp_distance(-1.0, -0.5, DType::bf16), 128.0);
  // A value the dtype does not hold falls between its neighbours.
  EXPECT_EQ(*ulp_distance(1.0, 1.0 + std::ldexp(1.0, -11), DType::f16), 0.5);
  EXPECT_EQ(difference_text(1.0, 1.0 + std::ldexp(1.0, -11), DType::f16), "0.5 ulp (f16)");
  // Far apart in f64: short, in e-notation.
  EXPECT_EQ(difference_text(0.622459, 0.669762, DType::f64, 6.1e-15).substr(0, 17), "4.3e+14 ulp (f64)");
}

}  // namespace
}  // namespace attncheck

namespace attncheck {
namespace {

// The shrunk case as the console shows it (Problem::describe): decimals with
// the dtype's shortest digits; a large tensor by its named extents and its
// nonzero elements, or its first rows and a count of the rest.
TEST(DescribeTensors, SmallWholeLargeByNonzeroOrHead) {
  Problem p = make_problem(DType::f32, Shape{1, 1, 2, 40, 64, 1}, Causal::none, std::nan(""));
  p.q[0] = round_to(DType::f32, 0.1);
  p.q[64 + 7] = -2;
  for (std::size_t i = 0; i < p.k.size(); ++i) p.k[i] = static_cast<double>(i % 5) - 2;
  p.v[3] = 1.5;
  const std::string d = p.describe();
  // q: 128 elements, 2 nonzero: listed by index, in decimal.
  EXPECT_NE(d.find("q = [batch=1, heads=1, q_len=2, head_dim=64], 128 elements, 2 nonzero:\n"
                   "      q[0, 0, 0, 0] = 0.1\n      q[0, 0, 1, 7] = -2\n"),
            std::string::npos) << d;
  // k: 2560 elements, most nonzero: its first row, and a count of the rest.
  EXPECT_NE(d.find("k = [batch=1, kv_heads=1, kv_len=40, head_dim=64], 2560 elements, 2048 nonzero\n"
                   "      k[0, 0, 0, :] = [-2, -1, 0, 1, 2, -2,"),
            std::string::npos) << d;
  EXPECT_NE(d.find("      ... (39 more rows of 64)\n"), std::string::npos) << d;
  // v: 40 elements, whole.
  EXPECT_NE(d.find("v = [[0]\n      [0]\n      [0]\n      [1.5]\n"), std::string::npos) << d;
  EXPECT_EQ(d.find("elements)"), std::string::npos) << d;  // never a size alone
}

}  // namespace
}  // namespace attncheck
