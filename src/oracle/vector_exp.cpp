#include "oracle/vector_exp.h"

#include <bit>
#include <cmath>

#include "oracle/fast_kernels.h"
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

// x clamped to [kLowest, 708], so every lane computes something finite.
template <class S>
ATTNCHECK_INLINE typename S::d clamp_lanes(typename S::d x) {
  const typename S::d lowest = S::splat(kLowest), highest = S::splat(708);
  return x < lowest ? lowest : (x > highest ? highest : x);
}
// One lane's arithmetic, S::kD lanes at a time: the same operations as
// exp_scalar below, so the same values; GCC left the scalar loop
// unvectorised (its Horner loop a scalar FMA chain).
template <class S>
ATTNCHECK_INLINE typename S::d exp_lanes(typename S::d x) {
  using V = typename S::d;
  const V shifter = S::splat(kShifter);
  const V xt = clamp_lanes<S>(x);
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

// Positive or NaN where a lane of x lies outside [kLowest, 708] (NaN
// included), where 2^n would leave the normal range: std::exp redoes those;
// 0 where every lane is inside. Summed over a row, the sum says whether any
// lane was outside. (A compare into a mask would do, but GCC 12 made it a
// scalar compare a lane; the clamp's selects vectorise.)
template <class S>
ATTNCHECK_INLINE typename S::d outside_lanes(typename S::d x) {
  return S::abs(clamp_lanes<S>(x) - x);
}
template <class S>
ATTNCHECK_INLINE bool any_outside(typename S::d outside_sum) {
  double sum = 0;
  for (int l = 0; l < S::kD; ++l) sum += outside_sum[l];
  return !(sum == 0);
}

// One lane's arithmetic, scalar: exp_lanes' operations in the same order.
double exp_scalar(double x) {
  const double xt = x < kLowest ? kLowest : (x > 708 ? 708 : x);
  const double shifted = std::fma(xt, kLog2e, kShifter);
  const double k = shifted - kShifter;  // round(x / ln2), exactly an integer
  const double r = std::fma(-k, kLn2Lo, std::fma(-k, kLn2Hi, xt));
  double poly = kC[13];
  for (int c = 12; c >= 0; --c) poly = std::fma(poly, r, kC[c]);
  // 2^k from its bits: the shifter's low bits hold k (two's complement).
  const uint64_t bits = std::bit_cast<uint64_t>(shifted) - std::bit_cast<uint64_t>(kShifter);
  const double two_k = std::bit_cast<double>((bits + 1023) << 52);
  return poly * two_k;
}

bool outside(double x) { return !(x >= kLowest && x <= 708); }

}  // namespace

void exp_array(const double* x, double* y, int64_t n) {
  int64_t t0 = 0;
  // Whether a lane went outside: then (rarely) the whole array is looked over again.
  const bool redo = run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(s)>;
    typename S::d out = {};
    for (; t0 + S::kD <= n; t0 += S::kD) {
      const typename S::d xv = S::load(x + t0);
      out += outside_lanes<S>(xv);  // clamped inside exp_lanes, so every lane computes something finite
      S::store(y + t0, exp_lanes<S>(xv));
    }
    return any_outside<S>(out);
  });
  for (int64_t t = t0; t < n; ++t) y[t] = outside(x[t]) ? std::exp(x[t]) : exp_scalar(x[t]);
  if (redo)
    for (int64_t t = 0; t < t0; ++t)
      if (outside(x[t])) y[t] = std::exp(x[t]);
}

double exp_weights(const double* s, const double* vis, double m, double* x, double* w, int64_t n) {
  bool redo = false;
  const double total = run_in_vector_build([&](auto simd) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(simd)>;
    using V = typename S::d;
    constexpr int kParts = kLanes / S::kD;
    const V mv = S::splat(m), zero = {};
    V acc[kParts] = {};
    V out = {};
    for (int64_t j0 = 0; j0 < n; j0 += kLanes)
      #pragma GCC unroll 8  // whole: the vectors stay in registers
      for (int p = 0; p < kParts; ++p) {
        const int64_t j = j0 + p * S::kD;
        const V seen = S::load(vis + j);
        const V xv = seen > zero ? S::load(s + j) - mv : zero;
        out += outside_lanes<S>(xv);
        const V wv = exp_lanes<S>(xv) * seen;
        S::store(x + j, xv);
        S::store(w + j, wv);
        acc[p] += wv;
      }
    redo = any_outside<S>(out);
    return lanes_sum<S>(acc);
  });
  if (!redo) return total;
  // A weight below 2^-1021 or so: std::exp's, then the sum again in the same lane order.
  for (int64_t j = 0; j < n; ++j)
    if (outside(x[j])) w[j] = std::exp(x[j]) * vis[j];
  return masked_sum_kernel(w, vis, n);
}

}  // namespace attncheck::oracle_detail
