// exp and log of a double-word, with rigorous error bounds: the softmax
// weights exp(s - m) and the log of the row sum of the f64 oracle (issue #12).
// Built only from the operations of double_double.h (whose rules on
// contraction apply here too) and branch-free, so dd_exp_array vectorises.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "oracle/double_double.h"

namespace attncheck::dd {

// --- exp ---------------------------------------------------------------------
//
// exp(x) for a normalized DW x, returned as a normalized DW.
//
// Bound: |result - exp(x)| <= kExpErr u^2 exp(x) for kExpRelMinArg <= x <=
// kExpMaxArg; for kExpZeroArg <= x < kExpRelMinArg add 2^-1074 absolute (the
// result's lo, then its hi, go subnormal); x < kExpZeroArg returns exactly 0
// (exp(x) < 2^-1075: the absolute error is below half the smallest subnormal);
// x > kExpMaxArg returns +inf, NaN returns NaN.
//
// Method and derivation of kExpErr (reproduced numerically by the test
// DoubleDoubleExp.BoundDerivation):
//  1. Reduction x = k ln2 + r. k = nearest integer to x.hi / ln2 (an fma with
//     the 1.5*2^52 shifter), so |r| <= ln2 (1/2 + 1.7e-13) < Rmax = 0.3466.
//     ln2 = L1 + L2 + L3 (+ 4.4e-48): L1 has 42 bits, so k L1 is exact for
//     |k| <= 1076 and x.hi - k L1 is exact (Sterbenz); k L2 by two_prod, exact;
//     then two DW + double additions (2u^2 each, relative to |r| + 2^-84) and
//     the rounding of e + k L3 (~2^-86). Absolute error of r:
//     Delta <= 4u^2 (Rmax + 2^-84) + u 2^-85 + 1076 * 4.4e-48 < 1.387 u^2,
//     which becomes a relative error e^Delta - 1 of the result.
//  2. r' = r / 16 (exact), |r'| <= rho = Rmax/16. expm1(r') by its Taylor
//     polynomial of degree 14, truncation <= rho^14/15!/((1-rho)(1-rho/2))
//     < 0.001 u^2 relative. Horner from the top: coefficients 1/9!..1/14! and
//     their steps in double (each step's error is damped by |r'|/(j+1) per
//     level on the way down, so they cost < 1e-9 u^2 at the end); 1/3!..1/8! as
//     DW constants (error <= u^2), DW * DW and DW + DW steps; 1/2 and 1 exact,
//     DW + double. The recurrence
//       theta_j <= (1+a_j)(1 + kappa_j g_j + lambda_j((1+theta_{j+1})(1+m_j) - 1)) - 1,
//     (a, m, g the add, multiply and coefficient errors, lambda_j = max|r' q_{j+1}/q_j|,
//     kappa_j = max c_j/|q_j|) gives theta_1 <= 2.081 u^2; with the last product
//     r' q_1 and truncation, expm1(r') has relative error eta_0 <= 7.081 u^2.
//  3. Four doublings expm1(2t) = expm1(t) (2 + expm1(t)) (DW + double, DW * DW):
//     eta_{i+1} <= (1+eta_i)(1 + tanh(rho 2^(i-1)) eta_i)(1 + 2u^2)(1 + 5u^2) - 1,
//     eta_4 <= 38.94 u^2. Working on expm1 rather than squaring exp keeps the
//     error from doubling at each step (it would reach 16 eta_0).
//  4. y = 1 + expm1(r): relative error <= (1 + (e^Rmax - 1) eta_4)(1 + 2u^2) - 1
//     <= 18.13 u^2 (|expm1(r)/exp(r)| <= e^Rmax - 1 = 0.4142).
//  5. Scaling by 2^k (two exact power-of-two factors, so that 2^-1075..2^1024
//     are all reachable) is exact in the normal range.
//  Total: e^Delta (1 + 18.13 u^2) - 1 <= 19.515 u^2; kExpErr rounds it up (the
//  margin also covers the 2^-1075 of a lo part underflowing above kExpRelMinArg,
//  at most 2^-137 relative).
inline constexpr double kExpErr = 19.6;
inline constexpr double kExpMaxArg = 709.78;     // exp(709.78) < DBL_MAX; beyond, inf (past 709.7827)
inline constexpr double kExpZeroArg = -745.2;    // exp(-745.2) < 2^-1075
inline constexpr double kExpRelMinArg = -650.0;  // exp(-650) > 2^-938: lo stays normal

namespace detail {

// ln2 in three parts (mpmath, 400 bits): L1 = ln2 rounded to 42 bits, L2 =
// RN(ln2 - L1), L3 = RN(ln2 - L1 - L2); |ln2 - L1 - L2 - L3| < 4.5e-48.
inline constexpr double kLn2Part1 = 0x1.62e42fefa3800p-1;
inline constexpr double kLn2Part2 = 0x1.ef35793c76730p-45;
inline constexpr double kLn2Part3 = 0x1.f97b57a079a19p-103;
inline constexpr double kInvLn2 = 0x1.71547652b82fep+0;  // RN(1/ln2)
inline constexpr double kShifter = 0x1.8p52;             // fma(x, 1/ln2, 1.5*2^52) - 1.5*2^52 = nearest integer

// 1/j! as DW (h = RN(1/j!), l = RN(1/j! - h)) for j = 3..8, and RN(1/j!) for j = 9..14.
inline constexpr DW kInvFact3{0x1.5555555555555p-3, 0x1.5555555555555p-57};
inline constexpr DW kInvFact4{0x1.5555555555555p-5, 0x1.5555555555555p-59};
inline constexpr DW kInvFact5{0x1.1111111111111p-7, 0x1.1111111111111p-63};
inline constexpr DW kInvFact6{0x1.6c16c16c16c17p-10, -0x1.f49f49f49f49fp-65};
inline constexpr DW kInvFact7{0x1.a01a01a01a01ap-13, 0x1.a01a01a01a01ap-73};
inline constexpr DW kInvFact8{0x1.a01a01a01a01ap-16, 0x1.a01a01a01a01ap-76};
inline constexpr double kInvFact9 = 0x1.71de3a556c734p-19;
inline constexpr double kInvFact10 = 0x1.27e4fb7789f5cp-22;
inline constexpr double kInvFact11 = 0x1.ae64567f544e4p-26;
inline constexpr double kInvFact12 = 0x1.1eed8eff8d898p-29;
inline constexpr double kInvFact13 = 0x1.6124613a86d09p-33;
inline constexpr double kInvFact14 = 0x1.93974a8c07c9dp-37;

// 2^e for an exponent e in [-1022, 1023] given as the low bits of a uint64
// (two's complement), by building the double's bit pattern: branch-free and
// integer-only, so it vectorises (no double -> int64 conversion, which needs
// AVX-512DQ). Unsigned arithmetic: a garbage exponent (NaN input) wraps
// instead of overflowing, and the NaN then propagates through the result.
ATTNCHECK_DD_INLINE double pow2(uint64_t e) { return std::bit_cast<double>((e + 1023u) << 52); }

}  // namespace detail

ATTNCHECK_DD_INLINE DW exp(DW x) {
  using namespace detail;
  // Clamped for the reduction only (k stays within +-1076, so k L1 is exact);
  // out-of-range inputs are replaced at the end. NaN compares false and flows through.
  double xc = x.hi < -746.0 ? -746.0 : x.hi;
  xc = xc > 710.0 ? 710.0 : xc;
  const double t = std::fma(xc, kInvLn2, kShifter);
  const double k = t - kShifter;  // exact: an integer, |k| <= 1076
  // k as an integer, from t's bit pattern (its low bits hold k + 2^51).
  const uint64_t ki = std::bit_cast<uint64_t>(t) - std::bit_cast<uint64_t>(kShifter);

  // r = x - k ln2 as a DW (step 1).
  const double a = std::fma(-k, kLn2Part1, xc);  // exact
  const DW p = two_prod(k, kLn2Part2);           // exact
  const DW r1 = add(two_sum(a, -p.hi), x.lo);
  const double c = std::fma(k, kLn2Part3, p.lo);
  const DW r = add(r1, -c);

  // expm1(r / 16) by Taylor-Horner (step 2).
  // Exact, unless a subnormal x.lo made r.lo < 2^-1018: then off by < 2^-1075,
  // a relative 2^-1075 in the result.
  const DW rs{r.hi * 0x1p-4, r.lo * 0x1p-4};
  double q = kInvFact14;
  q = std::fma(q, rs.hi, kInvFact13);
  q = std::fma(q, rs.hi, kInvFact12);
  q = std::fma(q, rs.hi, kInvFact11);
  q = std::fma(q, rs.hi, kInvFact10);
  q = std::fma(q, rs.hi, kInvFact9);
  DW Q = add(mul(rs, q), kInvFact8);
  Q = add(mul(rs, Q), kInvFact7);
  Q = add(mul(rs, Q), kInvFact6);
  Q = add(mul(rs, Q), kInvFact5);
  Q = add(mul(rs, Q), kInvFact4);
  Q = add(mul(rs, Q), kInvFact3);
  Q = add(mul(rs, Q), 0.5);
  Q = add(mul(rs, Q), 1.0);
  DW e = mul(rs, Q);

  // Four doublings of the argument on expm1 (step 3), then exp = 1 + expm1 (step 4).
  for (int i = 0; i < 4; ++i) e = mul(e, add(e, 2.0));
  const DW y = add(e, 1.0);

  // y 2^k as y 2^k1 2^k2, k1 = floor(k/2), both factors normal (step 5). The
  // second factor's products round only when the result is subnormal; they are
  // round_product so that an FMA build cannot fuse them into fast_two_sum.
  const uint64_t k1 = static_cast<uint64_t>(static_cast<int64_t>(ki) >> 1);
  const double s1 = pow2(k1), s2 = pow2(ki - k1);
  const DW z = fast_two_sum(round_product(y.hi * s1, s2), round_product(y.lo * s1, s2));

  const bool zero = x.hi<kExpZeroArg, inf = x.hi> kExpMaxArg;
  return {zero ? 0.0 : (inf ? HUGE_VAL : z.hi), zero || inf ? 0.0 : z.lo};
}

// --- log -----------------------------------------------------------------------
//
// log(x) for a normalized DW x > 0 with x.hi normal or subnormal, finite.
// Bound (absolute, as a log is used: an absolute error in log Z is a relative
// error in exp(s - m - log Z)):
//   |result - log(x)| <= (kLogErrAbs + kLogErrRel |log(x)|) u^2,
// assuming std::log(double) is within 2^-40 of log on [1/2, 1) (glibc: < 1 ulp,
// i.e. 2^-54). x <= 0 gives NaN or -inf, +inf gives +inf, via std::log.
//
// Method: x = 2^m f with f = x 2^-m in [1/2, 1) (exact); y0 = std::log(f.hi);
// one Newton step on exp, d = f exp(-y0) - 1 = expm1(log f - y0), and
// log f = y0 + log1p(d) = y0 + d - d^2/2 + O(d^3), |d| <= 2^-40 so the O(d^3)
// term is < 2^-121. Errors: exp(-y0) (kExpErr, -y0 in [0, ln2]), the product
// f exp(-y0) (kMulErr), both relative to f exp(-y0) = 1 + d, become absolute
// errors in d (the subtraction of 1 is then exact up to 2u^2 |d|); the d^2/2
// term in double (< 2^-132); y0 + correction (2u^2 |log f| <= 1.39 u^2); m ln2
// as a DW (2u^2 |m ln2| + 2^-137); the final DW + DW (3u^2 |log x|, relative to
// the sum it rounds). Collected, with |m ln2| <= |log x| + ln2:
//   abs <= (19.6 + 5)(1 + 2^-40) + 1.39 + 2 ln2 + 2^-30 <= 27.38 (kLogErrAbs rounds up), rel <= 5.01.
// Not vectorised (std::log and frexp are library calls): one per row.
inline constexpr double kLogErrAbs = 27.5;
inline constexpr double kLogErrRel = 5.01;

inline DW log(DW x) {
  if (!(x.hi > 0) || !std::isfinite(x.hi)) return {std::log(x.hi), 0.0};
  int m = 0;
  const double fh = std::frexp(x.hi, &m);
  const DW f{fh, std::ldexp(x.lo, -m)};  // exact unless x.lo underflows (< 2^-1074 relative)
  const double y0 = std::log(f.hi);
  const DW d = add(mul(f, exp(DW{-y0, 0.0})), -1.0);
  const DW corr = add(d, -0.5 * (d.hi * d.hi));  // log1p(d) to O(d^3)
  const DW lf = add(corr, y0);
  // m ln2 = m L1 (exact: |m| <= 1074 < 2^11) + m L2 (two_prod) + m L3 (rounded).
  const double md = m;
  const DW ml2 = two_prod(md, detail::kLn2Part2);
  const DW mln2 = add(two_sum(md * detail::kLn2Part1, ml2.hi), std::fma(md, detail::kLn2Part3, ml2.lo));
  return add(mln2, lf);
}

}  // namespace attncheck::dd
