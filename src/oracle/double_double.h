// Double-word ("double-double") arithmetic: error-free transformations and a
// (hi, lo) number type with rigorous relative error bounds, the building block
// of the f64 oracle (issue #12), which needs accuracy far beyond double's but
// at vector speed that x87 long double cannot give.
//
// Sources of the algorithms and of every bound quoted here:
//  [JMP17] M. Joldes, J.-M. Muller, V. Popescu, "Tight and rigorous error bounds
//          for basic building blocks of double-word arithmetic", ACM TOMS 44(2),
//          2017 (algorithm numbers below are theirs).
//  [MR22]  J.-M. Muller, L. Rideau, "Formalization of double-word arithmetic, and
//          comments on [JMP17]", ACM TOMS 48(1), 2022 (Coq proofs; corrects the
//          bound of Algorithm 6).
//  [ORO05] T. Ogita, S. M. Rump, S. Oishi, "Accurate sum and dot product",
//          SIAM J. Sci. Comput. 26(6), 2005 (TwoSum/TwoProduct, Sum2, Dot2).
//
// Conventions. u = 2^-53 (double's unit roundoff), round to nearest even. A DW
// is normalized when hi = RN(hi + lo) (so |lo| <= ulp(hi)/2 <= u |hi|); every
// operation below takes and returns normalized DWs. The bounds hold barring
// underflow and overflow (as in [JMP17]): results whose lo part would fall
// below 2^-1022 lose relative accuracy (absolute error ~2^-1074 per rounding).
//
// Floating-point contraction. GCC contracts a*b+c into an FMA across
// statements whenever the target has FMA (-ffp-contract=fast, the default even
// in ISO C++ mode -std=c++20: checked with GCC 12), clang within one expression
// (-ffp-contract=on, clang 14). The build has no -march, so neither can
// contract in ordinary code, but these functions are always inlined into
// callers that may be FMA-enabled (target_clones in double_double_array.cpp,
// the oracle's own loops). So the rule in this file: every product whose
// rounding matters is an explicit std::fma, the hi part of two_prod (one of
// its uses is inside an fma, so GCC's contraction leaves it alone) or a
// round_product; no plain inexact product ever feeds a + or - directly. Then
// contraction finds nothing to change and results are bit-identical under
// every flag set (tests/core/double_double_test.cpp checks this in an
// FMA-enabled function).
#pragma once

#include <cmath>
#include <cstdint>

// Always inlined: the batch loops only vectorise with the bodies inlined, and
// each call site must compile the arithmetic for its own target (an FMA clone
// gets one vfmadd per std::fma, the baseline a correctly rounded libm fma).
#define ATTNCHECK_DD_INLINE [[gnu::always_inline]] inline
#define ATTNCHECK_DD_LAMBDA_INLINE __attribute__((always_inline))

namespace attncheck::dd {

inline constexpr double kU = 0x1p-53;    // unit roundoff of double
inline constexpr double kU2 = 0x1p-106;  // u^2: the unit every bound below is in

// Relative error bounds, in units of u^2: |computed - exact| <= k * u^2 * |exact|
// for normalized inputs, barring underflow/overflow. Each is the published
// bound (its u^3 terms kept), never an observed maximum.
// DW + double, Algorithm 4 (DWPlusFP) [JMP17]: 2u^2/(1-2u).
inline constexpr double kAddDoubleErr = 2.0 / (1.0 - 2.0 * kU);
// DW + DW, Algorithm 6 (AccurateDWPlusDW): [JMP17] states 3u^2/(1-4u); [MR22]
// found a gap in that proof and proved 3u^2 + 13u^3, which we use.
inline constexpr double kAddErr = 3.0 + 13.0 * kU;
// DW * double, Algorithm 9 (DWTimesFP3, with FMA) [JMP17]: 2u^2.
inline constexpr double kMulDoubleErr = 2.0;
// DW * DW, Algorithm 12 (DWTimesDW3, with FMA): 5u^2 in [JMP17]; [MR22] proves
// 4u^2. We keep the larger, published-first figure: it is safe either way.
inline constexpr double kMulErr = 5.0;
// DW / double, Algorithm 15 (DWDivFP3) [JMP17]: 3u^2.
inline constexpr double kDivDoubleErr = 3.0;
// DW / DW, Algorithm 18 (DWDivDW3, with FMA) [JMP17]: 9.8u^2, rounded up to 10
// to cover the neglected higher-order terms.
inline constexpr double kDivErr = 10.0;

struct DW {
  double hi = 0;
  double lo = 0;
};

// --- Error-free transformations [ORO05, JMP17 Algorithms 1-3] ---------------

// s + e == a + b exactly, for any finite a, b (Knuth/Moller TwoSum, 6 flops).
// No products: contraction cannot touch it.
ATTNCHECK_DD_INLINE DW two_sum(double a, double b) {
  const double s = a + b;
  const double bb = s - a;
  const double e = (a - (s - bb)) + (b - bb);
  return {s, e};
}

// s + e == a + b exactly when exponent(a) >= exponent(b), e.g. |a| >= |b|
// (Dekker Fast2Sum, 3 flops).
ATTNCHECK_DD_INLINE DW fast_two_sum(double a, double b) {
  const double s = a + b;
  const double e = b - (s - a);
  return {s, e};
}

// p + e == a * b exactly unless a*b underflows (e below 2^-1074 is lost):
// |a*b| >= 2^-969 or a*b == 0 suffices (2 flops with FMA).
ATTNCHECK_DD_INLINE DW two_prod(double a, double b) {
  const double p = a * b;
  const double e = std::fma(a, b, -p);
  return {p, e};
}

// RN(a * b), written as an fma with a zero addend (the same value, up to the
// sign of a zero result): for a rounded product that an algorithm then adds,
// where a plain a * b would be fused into the addition by GCC's contraction in
// an FMA-enabled caller, changing the algorithm. GCC keeps fma(a, b, 0) as it is.
ATTNCHECK_DD_INLINE double round_product(double a, double b) { return std::fma(a, b, 0.0); }

// --- Double-word operations --------------------------------------------------

ATTNCHECK_DD_INLINE DW neg(DW x) { return {-x.hi, -x.lo}; }

// x + y, Algorithm 4 (DWPlusFP), 10 flops, relative error <= kAddDoubleErr u^2.
ATTNCHECK_DD_INLINE DW add(DW x, double y) {
  const DW s = two_sum(x.hi, y);
  const double v = x.lo + s.lo;
  return fast_two_sum(s.hi, v);
}

// x + y, Algorithm 6 (AccurateDWPlusDW), 20 flops, relative error <= kAddErr u^2
// even under cancellation (relative to the exact x + y).
ATTNCHECK_DD_INLINE DW add(DW x, DW y) {
  const DW s = two_sum(x.hi, y.hi);
  const DW t = two_sum(x.lo, y.lo);
  const double c = s.lo + t.hi;
  const DW v = fast_two_sum(s.hi, c);
  const double w = t.lo + v.lo;
  return fast_two_sum(v.hi, w);
}

ATTNCHECK_DD_INLINE DW sub(DW x, DW y) { return add(x, neg(y)); }
ATTNCHECK_DD_INLINE DW sub(DW x, double y) { return add(x, -y); }

// x * y, Algorithm 9 (DWTimesFP3), 6 flops, relative error <= kMulDoubleErr u^2.
ATTNCHECK_DD_INLINE DW mul(DW x, double y) {
  const DW c = two_prod(x.hi, y);
  const double cl3 = std::fma(x.lo, y, c.lo);
  return fast_two_sum(c.hi, cl3);
}

// x * y, Algorithm 12 (DWTimesDW3), 9 flops, relative error <= kMulErr u^2.
// (tl0 = x.lo * y.lo is a plain product feeding only an fma's addend: GCC
// could fuse it into a second fma only by changing the fma, which it doesn't.)
ATTNCHECK_DD_INLINE DW mul(DW x, DW y) {
  const DW c = two_prod(x.hi, y.hi);
  const double tl0 = x.lo * y.lo;
  const double tl1 = std::fma(x.hi, y.lo, tl0);
  const double cl2 = std::fma(x.lo, y.hi, tl1);
  const double cl3 = c.lo + cl2;
  return fast_two_sum(c.hi, cl3);
}

// x / y, Algorithm 15 (DWDivFP3), relative error <= kDivDoubleErr u^2.
ATTNCHECK_DD_INLINE DW div(DW x, double y) {
  const double th = x.hi / y;
  const DW p = two_prod(th, y);
  const double dh = x.hi - p.hi;  // exact (Sterbenz: p.hi is within an ulp of x.hi)
  const double dt = dh - p.lo;
  const double d = dt + x.lo;
  const double tl = d / y;
  return fast_two_sum(th, tl);
}

// x / y, Algorithm 18 (DWDivDW3): a reciprocal by one Newton step, then a
// DW * DW product; relative error <= kDivErr u^2.
ATTNCHECK_DD_INLINE DW div(DW x, DW y) {
  const double th = 1.0 / y.hi;
  const double rh = std::fma(-y.hi, th, 1.0);
  const double rl = round_product(-y.lo, th);  // feeds fast_two_sum's + and -
  const DW e = fast_two_sum(rh, rl);
  const DW d = mul(e, th);
  const DW m = add(d, th);
  return mul(x, m);
}

}  // namespace attncheck::dd
