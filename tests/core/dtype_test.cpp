// Element encodings round-trip and rounding follows the formats.
#include <gtest/gtest.h>

#include <cmath>

#include "problem/dtype.h"

namespace attncheck {
namespace {

TEST(DType, LimitsOfEachFormat) {
  EXPECT_EQ(max_finite(DType::f16), 65504.0);
  EXPECT_EQ(min_normal(DType::f16), std::ldexp(1.0, -14));
  EXPECT_EQ(min_subnormal(DType::bf16), std::ldexp(1.0, -133));
  EXPECT_EQ(round_to(DType::f16, 65520.0), INFINITY);  // past the last rounding boundary
  EXPECT_EQ(round_to(DType::bf16, 1.0 + 1.0 / 512), 1.0);  // ties to even
  EXPECT_EQ(round_to(DType::f32, 0.1), 0.100000001490116119384765625);
}

TEST(DType, EncodeDecodeRoundTrips) {
  for (DType t : kAllDTypes)
    for (double x : {0.0, -0.0, 1.0, -2.5, min_subnormal(t), min_normal(t), max_finite(t), double(INFINITY), -double(INFINITY)}) {
      unsigned char buf[8];
      encode_element(t, x, buf);
      const double y = decode_element(t, buf);
      EXPECT_EQ(y, x) << dtype_name(t) << " " << x;
      EXPECT_EQ(std::signbit(y), std::signbit(x));
    }
}

TEST(DType, NamesRoundTrip) {
  for (DType t : kAllDTypes) EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  EXPECT_FALSE(dtype_from_name("f8"));
}

}  // namespace
}  // namespace attncheck
