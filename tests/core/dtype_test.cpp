// Element encodings round-trip and rounding follows the formats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

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
  for (DType t : every_dtype())
    for (double x : {0.0, -0.0, 1.0, -2.5, min_subnormal(t), min_normal(t), max_finite(t), double(INFINITY), -double(INFINITY)}) {
      unsigned char buf[8];
      encode_element(t, x, buf);
      const double y = decode_element(t, buf);
      EXPECT_EQ(y, x) << dtype_name(t) << " " << x;
      EXPECT_EQ(std::signbit(y), std::signbit(x));
    }
}

// Each row's limits and roundoff agree with its own encoding: the largest
// finite value is finite and the next step up overflows, the subnormal and
// normal limits are representable and halving the subnormal rounds to zero,
// and 1 + u is a tie that rounds back to 1 while 1 + 2u is representable.
TEST(DType, EveryRowAgreesWithItsEncoding) {
  for (const DTypeInfo& d : all_dtypes()) {
    SCOPED_TRACE(std::string(d.name));
    EXPECT_EQ(&info(d.type), &d);
    EXPECT_EQ(find_dtype(static_cast<int>(d.type)), &d);
    EXPECT_EQ(round_to(d.type, d.max_finite), d.max_finite);
    EXPECT_EQ(round_to(d.type, d.max_finite * (1 + 2 * d.unit_roundoff)), INFINITY);
    EXPECT_EQ(round_to(d.type, d.min_subnormal), d.min_subnormal);
    EXPECT_EQ(round_to(d.type, d.min_subnormal / 2), 0.0);  // a tie, to even (zero)
    EXPECT_EQ(round_to(d.type, d.min_normal), d.min_normal);
    EXPECT_EQ(round_to(d.type, d.min_normal - d.min_subnormal), d.min_normal - d.min_subnormal);
    EXPECT_EQ(round_to(d.type, 1 + d.unit_roundoff), 1.0);
    EXPECT_EQ(round_to(d.type, 1 + 2 * d.unit_roundoff), 1 + 2 * d.unit_roundoff);
    EXPECT_LE(unit_roundoff(d.compute), d.unit_roundoff);  // computing never loses precision
    // The poison marker is a NaN that arithmetic never returns (any operation quiets it).
    volatile double poison = d.decode(&d.poison_bits);
    EXPECT_TRUE(std::isnan(poison));
    uint64_t requiet = 0;
    d.encode(poison + 0.0, &requiet);
    EXPECT_NE(std::memcmp(&requiet, &d.poison_bits, d.bytes), 0);
  }
  EXPECT_EQ(find_dtype(-1), nullptr);
  EXPECT_EQ(find_dtype(static_cast<int>(all_dtypes().size())), nullptr);
  EXPECT_EQ(dtype_names(), "f32, f64, f16, bf16");
}

// The row loops (encode_n, decode_n) write and read exactly the bytes the
// per-element encode and decode do, on values of every kind: in range, ties,
// out of range, subnormal, NaN, infinities, signed zeros. And the poison
// marker over a row is found wherever it is, and nowhere else.
TEST(DType, RowLoopsAgreeWithTheElementCodec) {
  std::mt19937_64 rng(20261202);
  std::vector<double> values = {0.0, -0.0, 1.0, -1.5, INFINITY, -INFINITY, NAN, 1e-45, 6e-8, 65504.0, 65520.0, 1e39,
                                -3.4028235e38, 0x1.0000000000001p0, 0x1.002p0, 0x1.001p0, 1e-320};
  std::normal_distribution<double> normal;
  while (values.size() < 4096)
    values.push_back(normal(rng) * std::exp2(static_cast<double>(static_cast<int>(rng() % 300) - 150)));
  const int64_t n = static_cast<int64_t>(values.size());
  for (const DTypeInfo& d : all_dtypes()) {
    SCOPED_TRACE(std::string(d.name));
    std::vector<uint8_t> row(n * d.bytes), one(n * d.bytes);
    d.encode_n(values.data(), n, row.data());
    for (int64_t i = 0; i < n; ++i) d.encode(values[i], one.data() + i * d.bytes);
    EXPECT_EQ(row, one);
    std::vector<double> back(n), back_one(n);
    d.decode_n(row.data(), n, back.data());
    for (int64_t i = 0; i < n; ++i) back_one[i] = d.decode(row.data() + i * d.bytes);
    EXPECT_EQ(std::memcmp(back.data(), back_one.data(), n * sizeof(double)), 0);

    int64_t first = -7;
    EXPECT_EQ(count_poison(d.type, row.data(), n, &first), 0);
    EXPECT_EQ(first, -7);  // untouched without a marker
    fill_poison(d.type, row.data() + 100 * d.bytes, 3);
    fill_poison(d.type, row.data() + 4000 * d.bytes, 1);
    EXPECT_EQ(count_poison(d.type, row.data(), n, &first), 4);
    EXPECT_EQ(first, 100);
    for (int64_t i : {100, 101, 102, 4000}) EXPECT_EQ(std::memcmp(row.data() + i * d.bytes, &d.poison_bits, d.bytes), 0);
    EXPECT_NE(std::memcmp(row.data() + 103 * d.bytes, &d.poison_bits, d.bytes), 0);
  }
}

// round_n rounds a whole row as round_to rounds each element, bit for bit
// (NaN included), over more than one of its chunks and a ragged end.
TEST(DType, RoundNAgreesWithRoundTo) {
  std::mt19937_64 rng(20261203);
  std::vector<double> values = {0.0, -0.0, 1.0, -1.5, INFINITY, -INFINITY, NAN, 1e-45, 6e-8, 65504.0, 65520.0, 1e39,
                                -3.4028235e38, 0x1.0000000000001p0, 0x1.002p0, 0x1.001p0, 1e-320};
  std::normal_distribution<double> normal;
  while (values.size() < 1000)
    values.push_back(normal(rng) * std::exp2(static_cast<double>(static_cast<int>(rng() % 300) - 150)));
  for (DType t : every_dtype()) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    std::vector<double> row = values, one(values.size());
    round_n(t, row.data(), static_cast<int64_t>(row.size()));
    for (std::size_t i = 0; i < values.size(); ++i) one[i] = round_to(t, values[i]);
    EXPECT_EQ(std::memcmp(row.data(), one.data(), row.size() * sizeof(double)), 0);
  }
}

TEST(DType, NamesRoundTrip) {
  for (DType t : every_dtype()) EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  EXPECT_FALSE(dtype_from_name("f8"));
}

}  // namespace
}  // namespace attncheck
