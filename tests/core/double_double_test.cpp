// Double-word arithmetic against __float128: every result within its
// documented bound on random and hard inputs, the bounds not loose (the worst
// observed error / bound ratio per operation is printed and must exceed a
// floor), the error-free transformations exact under the build's own flags and
// in an FMA-enabled function, and the batch entry points bit-identical to the
// scalar functions.
#include "oracle/double_double.h"

#include <gtest/gtest.h>
#include <quadmath.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "driver/seed_env.h"
#include "oracle/double_double_array.h"
#include "oracle/double_double_dot.h"
#include "oracle/double_double_exp.h"

namespace attncheck::dd {
namespace {

using Q = __float128;

// A quad-precision double-word (hi + lo, ~226 bits): exact sums of a few
// doubles and of products of doubles (each exact in quad), so the references
// for add and mul are exact to far below u^2 even under cancellation.
struct Q2 {
  Q hi = 0, lo = 0;
};
Q2 q2_add(Q2 x, Q b) {
  const Q s = x.hi + b;
  const Q bb = s - x.hi;
  const Q e = (x.hi - (s - bb)) + (b - bb);
  return {s, x.lo + e};
}
Q2 exact_sum(std::initializer_list<Q> terms) {
  Q2 acc;
  for (Q t : terms) acc = q2_add(acc, t);
  return acc;
}
// |z - exact| / |exact|, the difference taken hi to hi first (exact there).
double rel_err(DW z, Q2 exact) {
  const Q err = (((Q)z.hi - exact.hi) + (Q)z.lo) - exact.lo;
  const Q mag = exact.hi + exact.lo;
  if (mag == 0) return err == 0 ? 0.0 : HUGE_VAL;
  return (double)fabsq(err / mag);
}
Q to_q(DW x) { return (Q)x.hi + (Q)x.lo; }

uint64_t seed() { return attncheck::seed_from_env_or(20261130); }

bool bits_equal(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
// Bit for bit, except that any two NaNs match (vector code may swap a
// commutative operation's operands and so pick the other NaN's payload).
bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || bits_equal(a, b); }

// Random normalized DWs over a spread of magnitudes, with hard cases mixed in.
struct Gen {
  std::mt19937_64 rng{seed()};
  double uniform(double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); }
  int integer(int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); }
  double number(int min_exp, int max_exp) {
    const double m = uniform(1, 2) * (integer(0, 1) ? 1 : -1);
    return std::ldexp(m, integer(min_exp, max_exp));
  }
  // A normalized DW: lo anywhere from ulp(hi)/2 down to 2^-60 of it, or 0.
  DW dw(int min_exp, int max_exp) {
    const double hi = number(min_exp, max_exp);
    if (integer(0, 9) == 0) return {hi, 0.0};
    const double lo = hi * 0x1p-53 * uniform(-1, 1) * std::ldexp(1.0, -integer(0, 7) * integer(0, 1));
    return fast_two_sum(hi, lo);
  }
  // y close to -x: hi parts a few ulps apart or equal, so x + y cancels.
  DW near_negative(DW x) {
    const double hi = -x.hi * (1 + integer(-4, 4) * 0x1p-52);
    const double lo =
        integer(0, 1) ? -x.lo * (1 + uniform(-1, 1) * std::ldexp(1.0, -integer(1, 40))) : hi * 0x1p-53 * uniform(-1, 1);
    return fast_two_sum(hi, lo);
  }
};

// Worst error / bound per operation, printed at the end of each test.
struct Worst {
  const char* name;
  double ratio = 0;
  int64_t checked = 0;
  void see(double err, double bound) {
    ++checked;
    ratio = std::max(ratio, err / bound);
  }
  ~Worst() { std::printf("  %-22s worst error/bound %.3f over %lld cases\n", name, ratio, (long long)checked); }
};

constexpr int kCases = 200000;

TEST(DoubleDouble, ErrorFreeTransformationsAreExact) {
  Gen g;
  for (int i = 0; i < kCases; ++i) {
    // b within 55 binades of a, so that a quad holds a + b exactly (further
    // apart, two_sum is trivially exact: s = the larger, e = the smaller).
    const double a = g.number(-300, 300);
    const double b = std::ldexp(g.uniform(1, 2) * (g.integer(0, 1) ? 1 : -1), std::ilogb(a) + g.integer(-55, 55));
    const DW s = two_sum(a, b);
    ASSERT_TRUE((Q)s.hi + (Q)s.lo == (Q)a + (Q)b) << a << " " << b;
    ASSERT_EQ(s.hi, a + b);
    const double big = std::fabs(a) >= std::fabs(b) ? a : b, small = std::fabs(a) >= std::fabs(b) ? b : a;
    const DW f = fast_two_sum(big, small);
    ASSERT_TRUE(bits_equal(f.hi, s.hi) && f.lo == s.lo) << a << " " << b;
    const DW p = two_prod(a, b);
    ASSERT_TRUE((Q)p.hi + (Q)p.lo == (Q)a * (Q)b) << a << " " << b;  // both sides exact in quad
  }
  // Cancellation and nearby values, where a contracted or reassociated two_sum would show.
  for (int i = 0; i < kCases; ++i) {
    const double a = g.number(-60, 60), b = -a * (1 + g.integer(-1000, 1000) * 0x1p-52) + g.number(-120, -60);
    const DW s = two_sum(a, b);
    ASSERT_TRUE((Q)s.hi + (Q)s.lo == (Q)a + (Q)b) << a << " " << b;
  }
}

TEST(DoubleDouble, ArithmeticWithinItsBounds) {
  Gen g;
  Worst add_d{"add(DW, double)"}, add_dw{"add(DW, DW)"}, add_cancel{"add(DW, DW) cancelling"}, mul_d{"mul(DW, double)"},
      mul_dw{"mul(DW, DW)"}, div_d{"div(DW, double)"}, div_dw{"div(DW, DW)"};
  // Quad division rounds x, y and the quotient: within 3 * 2^-113 = 0.024 u^2 of the exact one.
  constexpr double kQuadDivSlack = 0.03;
  for (int i = 0; i < kCases; ++i) {
    const DW x = g.dw(-200, 200), y = g.dw(-200, 200);
    const double d = g.integer(0, 3) ? g.number(-200, 200) : -x.hi * (1 + g.integer(-8, 8) * 0x1p-52);
    add_d.see(rel_err(add(x, d), exact_sum({(Q)x.hi, (Q)x.lo, (Q)d})), kAddDoubleErr * kU2);
    add_dw.see(rel_err(add(x, y), exact_sum({(Q)x.hi, (Q)y.hi, (Q)x.lo, (Q)y.lo})), kAddErr * kU2);
    const DW yc = g.near_negative(x);
    const Q2 cancel = exact_sum({(Q)x.hi, (Q)yc.hi, (Q)x.lo, (Q)yc.lo});
    if (cancel.hi != 0) add_cancel.see(rel_err(add(x, yc), cancel), kAddErr * kU2);
    mul_d.see(rel_err(mul(x, d), exact_sum({(Q)x.hi * (Q)d, (Q)x.lo * (Q)d})), kMulDoubleErr * kU2);
    mul_dw.see(
        rel_err(mul(x, y), exact_sum({(Q)x.hi * (Q)y.hi, (Q)x.hi * (Q)y.lo, (Q)x.lo * (Q)y.hi, (Q)x.lo * (Q)y.lo})),
        kMulErr * kU2);
    const Q qd = to_q(x) / (Q)d, qdw = to_q(x) / to_q(y);
    div_d.see(rel_err(div(x, d), {qd, 0}), (kDivDoubleErr + kQuadDivSlack) * kU2);
    div_dw.see(rel_err(div(x, y), {qdw, 0}), (kDivErr + kQuadDivSlack) * kU2);
  }
  // (Cancelling sums are checked, not used to judge tightness: when the hi
  // parts cancel, Algorithm 6 is often exact.)
  EXPECT_LE(add_cancel.ratio, 1.0);
  for (const Worst* w : {&add_d, &add_dw, &mul_d, &mul_dw, &div_d, &div_dw}) {
    EXPECT_LE(w->ratio, 1.0) << w->name;
    EXPECT_GE(w->ratio, 0.1) << w->name << ": the bound is loose, or the hard cases miss";
  }
}

// exp(x) of a DW in quad: expq of the rounded argument, corrected by the
// rounding (x - RN_q(x) is below 2^-103, so exp(d) = 1 + d to far below u^2).
Q exp_reference(DW x) {
  const Q xq = to_q(x);
  const Q d = (((Q)x.hi - xq) + (Q)x.lo);
  return expq(xq) * (1 + d);
}

TEST(DoubleDoubleExp, WithinItsBound) {
  Gen g;
  Worst rel{"exp relative"}, tiny{"exp below RelMinArg"}, positive{"exp x > 0"};
  // expq is within ~1 ulp of quad (2^-112): a 0.02 u^2 slack on the reference.
  constexpr double kRefSlack = 0.05;
  const auto check = [&](DW x) {
    const DW z = exp(x);
    const Q ref = exp_reference(x);
    if (x.hi < kExpZeroArg) {
      ASSERT_EQ(z.hi, 0.0);
      ASSERT_EQ(z.lo, 0.0);
      ASSERT_TRUE(ref < (Q)0x1p-1074 / 2) << x.hi;
      return;
    }
    const Q err = fabsq(to_q(z) - ref);
    if (x.hi >= kExpRelMinArg) {
      (x.hi > 0 ? positive : rel).see((double)(err / ref), (kExpErr + kRefSlack) * kU2);
    } else {
      tiny.see((double)(err / ((kExpErr + kRefSlack) * kU2 * ref + (Q)0x1p-1074)), 1.0);
    }
    ASSERT_EQ(z.hi + z.lo, z.hi) << "not normalized at " << x.hi;
  };
  for (int i = 0; i < kCases; ++i) {
    const int kind = g.integer(0, 5);
    double hi;
    if (kind == 0)
      hi = -g.uniform(0, 1) * std::ldexp(1.0, -g.integer(0, 60));  // near 0
    else if (kind == 1)
      hi = -745.2 + g.uniform(-0.5, 100);  // the underflow end
    else if (kind == 2)
      hi = g.integer(-1075, 0) * 0.693147180559945309 + g.uniform(-1e-9, 1e-9);  // r ~ 0
    else if (kind == 3)
      hi = (g.integer(-1075, 0) + 0.5) * 0.693147180559945309 + g.uniform(-1e-9, 1e-9);  // |r| ~ ln2/2
    else if (kind == 4)
      hi = g.uniform(0, 709.7);
    else
      hi = g.uniform(-745, 0);
    const double ulp = hi - std::nextafter(hi, 0.0);  // 0 at hi = 0
    const double lo = g.integer(0, 3) ? 0.0 : ulp * g.uniform(-0.5, 0.5);
    check(fast_two_sum(hi, lo));
  }
  for (double hi : {0.0, -0.0, -0x1p-1074, -1e-300, -745.1332191019411, -745.13321910194122, -745.2, -745.3, -800.0,
                    -708.3964185322641, -650.0, 709.78, -0.5 * 0.6931471805599453, 0.6931471805599453 / 2})
    check(DW{hi, 0.0});
  EXPECT_TRUE(std::isinf(exp(DW{710.0, 0}).hi));
  EXPECT_TRUE(std::isnan(exp(DW{NAN, 0}).hi));
  EXPECT_EQ(exp(DW{-INFINITY, 0}).hi, 0.0);
  EXPECT_TRUE(std::isinf(exp(DW{INFINITY, 0}).hi));
  EXPECT_EQ(exp(DW{0, 0}).hi, 1.0);
  EXPECT_EQ(exp(DW{0, 0}).lo, 0.0);
  for (const Worst* w : {&rel, &tiny, &positive}) EXPECT_LE(w->ratio, 1.0) << w->name;
  EXPECT_GE(rel.ratio, 0.05) << "kExpErr is loose";
}

// The derivation of kExpErr in double_double_exp.h, step by step, in long double.
TEST(DoubleDoubleExp, BoundDerivation) {
  using L = long double;
  const L u = 0x1p-53L, u2 = u * u, Rmax = 0.3466L, rho = Rmax / 16;
  const int n = 14;
  L c[n + 1], fact = 1;
  for (int j = 1; j <= n; ++j) c[j] = 1 / (fact *= j);
  const auto qmax = [&](int j) {
    L s = 0, p = 1;
    for (int i = j; i <= n; ++i, p *= rho) s += c[i] * p;
    return s;
  };
  const auto qmin = [&](int j) {
    L s = c[j], p = rho;
    for (int i = j + 1; i <= n; ++i, p *= rho) s -= c[i] * p;
    return s;
  };
  // (1 + a)(1 + b) - 1, without forming 1 + a (u^2 is below long double's epsilon).
  const auto compose = [](L a, L b) { return a + b + a * b; };
  L theta = u;
  for (int j = n - 1; j >= 1; --j) {
    const L lambda = rho * qmax(j + 1) / qmin(j), kappa = c[j] / qmin(j);
    L a, m, gam;
    if (j >= 9)
      a = u, m = u / (1 - u), gam = u;
    else if (j == 8)
      a = kAddErr * u2, m = kMulDoubleErr * u2, gam = u2;
    else if (j >= 3)
      a = kAddErr * u2, m = kMulErr * u2, gam = u2;
    else
      a = kAddDoubleErr * u2, m = kMulErr * u2, gam = 0;
    theta = compose(a, kappa * gam + lambda * compose(theta, m));
  }
  EXPECT_LT(theta / u2, 2.081L);
  const L fact15 = fact * 15;
  const L tau = std::pow(rho, (L)n) / (fact15 * (1 - rho) * (1 - rho / 2));
  const L eta0 = compose(compose(tau, theta), kMulErr * u2);
  EXPECT_LT(eta0 / u2, 7.081L);
  L eta = eta0;
  for (int i = 0; i < 4; ++i)
    eta = compose(compose(compose(eta, std::tanh(rho * std::ldexp(1.0L, i) / 2) * eta), kAddDoubleErr * u2),
                  kMulErr * u2);
  EXPECT_LT(eta / u2, 38.94L);
  const L eta_y = compose((std::exp(Rmax) - 1) * eta, kAddDoubleErr * u2);
  const L kmax = 1076, p_max = kmax * detail::kLn2Part2, c_max = (u * p_max + kmax * detail::kLn2Part3) * (1 + u);
  const L delta = 4 * u2 * (Rmax + 0x1p-84L) + u * c_max + kmax * 4.5e-48L;
  EXPECT_LT(delta / u2, 1.387L);
  const L total = compose(std::expm1(delta), eta_y);
  std::printf("  exp bound derivation: theta_1 %.4Lf, eta_0 %.4Lf, eta_4 %.4Lf, Delta %.4Lf, total %.4Lf u^2\n",
              theta / u2, eta0 / u2, eta / u2, delta / u2, total / u2);
  EXPECT_LT(total / u2, kExpErr);
  // |x / ln2 - k| <= 1/2 + 746 |1/ln2 - RN(1/ln2)| + 2^-44 / ln2 gives |r| < Rmax.
  const L ln2 = 0.693147180559945309417232121458176568L;
  EXPECT_LT(ln2 * (0.5L + 746 * std::fabs(1 / ln2 - detail::kInvLn2) + 0x1p-44L / ln2), Rmax);
  // The ln2 split and 1/j! constants against quad.
  const Q ln2q = logq((Q)2);
  EXPECT_LT((double)fabsq(ln2q - ((Q)detail::kLn2Part1 + (Q)detail::kLn2Part2 + (Q)detail::kLn2Part3)), 1e-33);
  EXPECT_EQ(std::ldexp(detail::kLn2Part1, 42), std::nearbyint(std::ldexp(detail::kLn2Part1, 42)));
}

TEST(DoubleDoubleExp, LogWithinItsBound) {
  Gen g;
  Worst w{"log absolute"};
  for (int i = 0; i < kCases / 4; ++i) {
    DW x = g.dw(-1000, 1000);
    x = x.hi < 0 ? neg(x) : x;
    if (g.integer(0, 3) == 0)
      x = fast_two_sum(1 + g.uniform(-1, 1) * std::ldexp(1.0, -g.integer(1, 50)), x.lo * 0x1p-1000);
    const DW y = log(x);
    const Q ref = logq((Q)x.hi) + log1pq((Q)x.lo / (Q)x.hi);
    const Q err = fabsq(to_q(y) - ref);
    w.see((double)err, (kLogErrAbs + kLogErrRel * (double)fabsq(ref) + 0.05) * kU2);
  }
  EXPECT_LE(w.ratio, 1.0);
  EXPECT_TRUE(std::isnan(log(DW{-1.0, 0}).hi));
  EXPECT_EQ(log(DW{0.0, 0}).hi, -INFINITY);
  EXPECT_EQ(log(DW{1.0, 0}).hi, 0.0);
}

TEST(DoubleDoubleDot, WithinItsBound) {
  Gen g;
  Worst random{"dot random"}, ill{"dot ill-conditioned"};
  for (int trial = 0; trial < 3000; ++trial) {
    const int64_t n = g.integer(0, 3) ? g.integer(1, 300) : g.integer(300, 5000);
    std::vector<double> a(n), b(n);
    const bool hard = trial % 2;
    for (int64_t i = 0; i < n; ++i) {
      a[i] = g.number(-20, 20);
      b[i] = g.number(-20, 20);
    }
    if (hard)  // pairs that cancel to ~2^-60 of their size, then a few small terms: condition ~1e20 and up
      for (int64_t i = 0; i + 1 < n; i += 2) {
        a[i + 1] = -a[i] * (1 + g.integer(-3, 3) * 0x1p-52);
        b[i + 1] = b[i] * (1 + g.integer(-3, 3) * 0x1p-52);
      }
    Q2 exact;
    for (int64_t i = 0; i < n; ++i) exact = q2_add(exact, (Q)a[i] * (Q)b[i]);
    const DotResult r = dot2(a.data(), b.data(), n);
    const Q err = fabsq((((Q)r.value.hi - exact.hi) + (Q)r.value.lo) - exact.lo);
    (hard ? ill : random).see((double)err, dot2_bound_factor(n) * r.abs_sum);
  }
  EXPECT_LE(random.ratio, 1.0);
  EXPECT_LE(ill.ratio, 1.0);
  EXPECT_EQ(dot2(nullptr, nullptr, 0).value.hi, 0.0);
}

TEST(DoubleDoubleArray, BatchEntryPointsMatchScalarBitForBit) {
  Gen g;
  const int64_t n = 10007;  // not a multiple of any vector width: the tails too
  std::vector<double> hi(n), lo(n), oh(n), ol(n);
  for (int64_t i = 0; i < n; ++i) {
    const DW x = fast_two_sum(g.uniform(-760, 5), g.integer(0, 1) ? g.uniform(-1, 1) * 1e-14 : 0.0);
    hi[i] = x.hi;
    lo[i] = x.lo;
  }
  hi[0] = NAN, hi[1] = -INFINITY, hi[2] = 0, hi[3] = -745.2, lo[0] = lo[1] = lo[2] = lo[3] = 0;
  dd_exp_array(hi.data(), lo.data(), oh.data(), ol.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    const DW y = exp(DW{hi[i], lo[i]});
    ASSERT_TRUE(same(y.hi, oh[i]) && same(y.lo, ol[i])) << "exp at " << hi[i];
  }
  for (int64_t len : {0, 1, 15, 16, 17, 64, 128, 1000, 10007}) {
    // From element 4 on: past the NaN and infinity planted above.
    const int64_t m = len > 4 ? len - 4 : len;
    const DotResult vec = dd_dot(hi.data() + 4, lo.data() + 4, m), sc = dot2(hi.data() + 4, lo.data() + 4, m);
    EXPECT_TRUE(bits_equal(vec.value.hi, sc.value.hi) && bits_equal(vec.value.lo, sc.value.lo) &&
                bits_equal(vec.abs_sum, sc.abs_sum))
        << "dot of " << len;
  }
  std::vector<double> acc_hi(n, 0.0), acc_lo(n, 0.0), ref_hi(n, 0.0), ref_lo(n, 0.0), v(n);
  for (double& x : v) x = g.number(-30, 30);
  for (int k = 0; k < 20; ++k) {
    const DW w = g.dw(-10, 0);
    dd_axpy(w, v.data(), acc_hi.data(), acc_lo.data(), n);
    for (int64_t c = 0; c < n; ++c) {
      const DW r = add(DW{ref_hi[c], ref_lo[c]}, mul(w, v[c]));
      ref_hi[c] = r.hi, ref_lo[c] = r.lo;
    }
  }
  for (int64_t c = 0; c < n; ++c)
    ASSERT_TRUE(bits_equal(acc_hi[c], ref_hi[c]) && bits_equal(acc_lo[c], ref_lo[c])) << c;
}

TEST(DoubleDoubleArray, AxpyChainWithinItsBound) {
  Gen g;
  Worst w{"axpy chain"};
  const int64_t cols = 64, steps = 2000;
  std::vector<double> acc_hi(cols, 0.0), acc_lo(cols, 0.0), v(cols), abs_sum(cols, 0.0);
  std::vector<Q2> exact(cols);
  for (int64_t k = 0; k < steps; ++k) {
    const DW wk = g.dw(-40, 0);
    for (double& x : v) x = g.number(-10, 10);
    dd_axpy(wk, v.data(), acc_hi.data(), acc_lo.data(), cols);
    for (int64_t c = 0; c < cols; ++c) {
      exact[c] = q2_add(q2_add(exact[c], (Q)wk.hi * (Q)v[c]), (Q)wk.lo * (Q)v[c]);
      abs_sum[c] += std::fabs((double)(to_q(wk) * (Q)v[c]));  // rounded: the 1e-12 below covers it
    }
  }
  for (int64_t c = 0; c < cols; ++c) {
    const Q err = fabsq((((Q)acc_hi[c] - exact[c].hi) + (Q)acc_lo[c]) - exact[c].lo);
    w.see((double)err, axpy_chain_bound_factor(steps) * abs_sum[c] * (1 + 1e-12));
  }
  EXPECT_LE(w.ratio, 1.0);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// The same operations compiled for AVX2 + FMA under this file's own flags
// (GCC: -ffp-contract=fast in C++ even with -std=c++20), where GCC would fuse
// any plain product into a following addition: if double_double.h let one
// through, the results would differ from the baseline build's in the last bits.
// `ops` is inlined into both callers, so each compiles it for its own target.
__attribute__((always_inline)) inline void ops(const DW* x, const DW* y, DW* out, int n) {
  for (int i = 0; i < n; ++i) {
    out[9 * i + 0] = two_sum(x[i].hi, y[i].hi);
    out[9 * i + 1] = two_prod(x[i].hi, y[i].hi);
    out[9 * i + 2] = add(x[i], y[i]);
    out[9 * i + 3] = mul(x[i], y[i].hi);
    out[9 * i + 4] = mul(x[i], y[i]);
    out[9 * i + 5] = div(x[i], y[i].hi);
    out[9 * i + 6] = div(x[i], y[i]);
    out[9 * i + 7] = exp(DW{-std::fabs(x[i].hi) * 0x1p-190, x[i].lo * 0x1p-190});
    out[9 * i + 8] = add(x[i], y[i].hi);
  }
}
__attribute__((target("avx2,fma"))) void ops_with_fma(const DW* x, const DW* y, DW* out, int n) { ops(x, y, out, n); }
void ops_baseline(const DW* x, const DW* y, DW* out, int n) { ops(x, y, out, n); }

TEST(DoubleDouble, FmaContractionChangesNothing) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) GTEST_SKIP() << "no AVX2/FMA here";
  Gen g;
  const int n = 20000;
  std::vector<DW> x(n), y(n), a(9 * n), b(9 * n);
  for (int i = 0; i < n; ++i) {
    x[i] = g.dw(180, 200);  // exp's argument is -|x| 2^-190: within [-2^11, 0]
    y[i] = g.integer(0, 1) ? g.dw(180, 200) : g.near_negative(x[i]);
  }
  ops_with_fma(x.data(), y.data(), a.data(), n);
  ops_baseline(x.data(), y.data(), b.data(), n);
  for (int i = 0; i < 9 * n; ++i)
    ASSERT_TRUE(bits_equal(a[i].hi, b[i].hi) && bits_equal(a[i].lo, b[i].lo))
        << "operation " << i % 9 << " case " << i / 9;
}
#endif

}  // namespace
}  // namespace attncheck::dd
