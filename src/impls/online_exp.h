// The weights of one key tile, w_jj = exp(s_jj - m), for online's forward:
// the one transcendental per score, and with libm's scalar expf a call per
// key (a third of online's time at head_dim 64). The float version is a
// plain loop that vectorises in every build (vector_isa.h).
//
// Float: x = RN_f(s - m) exactly as std::exp(s - m) would take it, then
// exp(x) in double and rounded once to float. In double, x = n ln2 + r with
// n = round(x log2(e)) (|n| <= 231 after the clamp), r = x - n ln2 (|r| <=
// 0.3466 + 2^-40: the product n ln2 and the subtraction each round by at most
// 2^-53 * 161, and ln2 itself is within 2^-54 relative), and exp(r) by its
// Taylor polynomial of degree 8: truncation below r^9/9! e^|r| < 2.8e-10
// relative, Horner's rounding in double below 1e-15. So exp(x) in double is
// within 3e-10 relative of the truth, 0.003 float ulps, and the one rounding
// to float adds half an ulp: under 0.51 ulps, where the oracle's bound allows
// an implementation's exp 2 (kLibmExpUlps). A result below float's normal
// range rounds once, from a normal double, to float's subnormal grid, as a
// correctly rounded expf does. Clamping x to [-160, 100] changes no float
// result (exp(-160) rounds to 0, exp(100) to +inf); NaN is passed through.
// tests/core/online_exp_test.cpp measures the error against exp in long
// double on every 61st negative float down to -104, in every build.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "impls/online_tiles.h"

namespace attncheck::online_tiles {

// s[jj] = exp(RN(s[jj] - m)) for jj < kKeyTile; exp(-inf) = 0.
ATTNCHECK_INLINE void tile_exp(float* __restrict s, float m) {
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2 = 0x1.62e42fefa39efp-1;
  constexpr double kShifter = 0x1.8p52;  // adding it rounds to an integer, kept in the low bits
  constexpr double kC[9] = {1.0, 1.0, 0.5, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320};
  const int64_t shifter_bits = std::bit_cast<int64_t>(kShifter);
  // Two loops: with the clamp in the same loop as the polynomial, GCC folds
  // the clamped lanes' exp to constants and branches, and vectorises neither.
  // The compares are quiet ones: with -ftrapping-math (the default) GCC
  // will not vectorise a select on an ordered compare, which traps on NaN.
  double xd[kKeyTile];
  for (int64_t jj = 0; jj < kKeyTile; ++jj) {
    double x = static_cast<double>(s[jj] - m);
    x = __builtin_isless(x, -160.0) ? -160.0 : x;  // NaN stays NaN (the compares are false)
    xd[jj] = __builtin_isgreater(x, 100.0) ? 100.0 : x;
  }
  for (int64_t jj = 0; jj < kKeyTile; ++jj) {
    const double x = xd[jj];
    const double shifted = x * kLog2e + kShifter;
    const double n = shifted - kShifter;
    const double r = x - n * kLn2;
    double poly = kC[8];
    poly = poly * r + kC[7];
    poly = poly * r + kC[6];
    poly = poly * r + kC[5];
    poly = poly * r + kC[4];
    poly = poly * r + kC[3];
    poly = poly * r + kC[2];
    poly = poly * r + kC[1];
    poly = poly * r + kC[0];
    // 2^n from its bits: the shifter's low bits hold n (two's complement).
    const int64_t two_n_bits = (std::bit_cast<int64_t>(shifted) - shifter_bits + 1023) << 52;
    // A NaN x makes poly NaN, and so the product, whatever two_n_bits hold.
    s[jj] = static_cast<float>(poly * std::bit_cast<double>(two_n_bits));
  }
}

// double: libm's exp, within 1 ulp (glibc). The form above has no wider type
// to compute in here.
ATTNCHECK_INLINE void tile_exp(double* __restrict s, double m) {
  for (int64_t jj = 0; jj < kKeyTile; ++jj) s[jj] = std::exp(s[jj] - m);
}

}  // namespace attncheck::online_tiles
