#include "oracle/vector_exp.h"

#include <bit>
#include <cmath>

#include "oracle/simd_native.h"

namespace attncheck::oracle_detail {

namespace {

// 1/k! rounded to double, k = 0..13.
constexpr double kC[14] = {1.0,
                           1.0,
                           0.5,
                           1.0 / 6,
                           1.0 / 24,
                           1.0 / 120,
                           1.0 / 720,
                           1.0 / 5040,
                           1.0 / 40320,
                           1.0 / 362880,
                           1.0 / 3628800,
                           1.0 / 39916800,
                           1.0 / 479001600,
                           1.0 / 6227020800.0};
constexpr double kLog2e = 1.4426950408889634;
constexpr double kLn2Hi = 0x1.62e42fefa39efp-1;   // ln 2 rounded to double
constexpr double kLn2Lo = 0x1.abc9e3b39803fp-56;  // ln 2 - kLn2Hi
constexpr double kShifter = 0x1.8p52;             // adding it rounds to an integer, kept in the low bits
constexpr double kLowest = -708;                  // 2^n stays normal above this

// One lane's arithmetic, S::kD lanes at a time: the same operations as the
// scalar loop below, so the same values; GCC left the scalar loop
// unvectorised (its Horner loop a scalar FMA chain).
template <class S>
ATTNCHECK_INLINE typename S::d exp_lanes(typename S::d x) {
  using V = typename S::d;
  const V lowest = S::splat(kLowest), highest = S::splat(708), shifter = S::splat(kShifter);
  const V xt = x < lowest ? lowest : (x > highest ? highest : x);
  const V shifted = S::fma(xt, S::splat(kLog2e), shifter);
  const V k = shifted - shifter;
  const V r = S::fma(-k, S::splat(kLn2Lo), S::fma(-k, S::splat(kLn2Hi), xt));
  V poly = S::splat(kC[13]);
  for (int c = 12; c >= 0; --c) poly = S::fma(poly, r, S::splat(kC[c]));
  typedef uint64_t vu __attribute__((vector_size(sizeof(V))));  // unsigned: the scalar loop's wrap-around
  vu bits, shifter_bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  std::memcpy(&shifter_bits, &shifter, sizeof bits);
  const vu two_k_bits = (bits - shifter_bits + 1023) << 52;
  V two_k;
  std::memcpy(&two_k, &two_k_bits, sizeof two_k);
  return poly * two_k;
}

}  // namespace

void exp_array(const double* x, double* y, int64_t n) {
  int64_t t0 = 0;
  run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(s)>;
    for (; t0 + S::kD <= n; t0 += S::kD) S::store(y + t0, exp_lanes<S>(S::load(x + t0)));
  });
  for (int64_t t = t0; t < n; ++t) {
    // Clamped so every lane computes something finite; the lanes outside are redone below.
    const double xt = x[t] < kLowest ? kLowest : (x[t] > 708 ? 708 : x[t]);
    const double shifted = std::fma(xt, kLog2e, kShifter);
    const double k = shifted - kShifter;  // round(x / ln2), exactly an integer
    const double r = std::fma(-k, kLn2Lo, std::fma(-k, kLn2Hi, xt));
    double poly = kC[13];
    for (int c = 12; c >= 0; --c) poly = std::fma(poly, r, kC[c]);
    // 2^k from its bits: the shifter's low bits hold k (two's complement).
    const uint64_t bits = std::bit_cast<uint64_t>(shifted) - std::bit_cast<uint64_t>(kShifter);
    const double two_k = std::bit_cast<double>((bits + 1023) << 52);
    y[t] = poly * two_k;
  }
  for (int64_t t = 0; t < n; ++t)
    if (!(x[t] >= kLowest && x[t] <= 708)) y[t] = std::exp(x[t]);
}

}  // namespace attncheck::oracle_detail
