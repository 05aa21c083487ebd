// The gradient oracle (src/oracle/grad_oracle.h, docs/tolerance.md "Gradients"):
//  - its exact dq, dk, dv against central differences (a fourth-order stencil)
//    of the forward oracle's exact output, each v2 feature alone and all
//    together, f32 (double oracle) and f64 (long double);
//  - the bound finite on ordinary rows and +inf where it says: padding rows and
//    keys, rows that see no key and keys no row sees, a row outside the
//    domain and every key of its kv head, a non-finite dout row;
//  - a 1e-6 relative fault of an f64 gradient flagged, and the message;
//  - the bound over a straightforward float / double backward
//    (tests/support/plain_v2_backward.h): never exceeded, and not absurdly
//    loose (typical and worst ratios printed).
// ATTNCHECK_SEED shifts every seed.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "driver/seed_env.h"
#include "oracle/grad_oracle.h"
#include "plain_v2_backward.h"
#include "gen/generators.h"

namespace attncheck {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

uint64_t base_seed() { return seed_from_env_or(20261130); }

// dout: Gaussian in the dtype on rows that exist, NaN on padding rows (never read).
void fill_dout(Problem& p, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  std::normal_distribution<double> n(0, 1);
  p.dout.assign(p.shape.out_size(), 0.0);
  for (int64_t bh = 0; bh < p.shape.batch * p.shape.heads; ++bh)
    for (int64_t i = 0; i < p.shape.q_len; ++i)
      for (int64_t c = 0; c < p.shape.value_dim; ++c)
        p.dout[p.out_at(bh, i, c)] =
            p.row_exists(bh, i) ? round_to(p.dtype, n(rng)) : std::numeric_limits<double>::quiet_NaN();
}

constexpr FeatureBits kV2Drawn = kAllFeatures & ~kV1Features;

// A small backward problem of Gaussian values: the features in `features`
// drawn at the generators' rates, those in `force` always.
Problem grad_problem(DType t, uint64_t seed, FeatureBits features, FeatureBits force, int64_t max_len = 9,
                     int64_t max_dim = 6, unsigned families = kGaussian) {
  GenOptions g;
  g.dtypes = {t};
  g.max_heads = 4;
  g.max_batch = 2;
  g.max_q_len = g.max_kv_len = max_len;
  g.max_head_dim = g.max_value_dim = max_dim;
  g.families = families;
  g.features = kV1Features | features | force;
  g.required = force & ~kV1Features;
  Problem p = sample_problem(g, seed, 100);
  fill_dout(p, seed);
  return p;
}

// sum over existing rows of out * dout, with the forward oracle's exact out.
double objective(const Problem& p) {
  const OracleResult o = oracle(p);
  double f = 0;
  for (int64_t bh = 0; bh < p.shape.batch * p.shape.heads; ++bh)
    for (int64_t i = 0; i < p.shape.q_len; ++i) {
      if (!p.row_exists(bh, i)) continue;
      for (int64_t c = 0; c < p.shape.value_dim; ++c) f += o.exact[p.out_at(bh, i, c)] * p.dout[p.out_at(bh, i, c)];
    }
  return f;
}

// d objective / d x by the fourth-order central stencil, step h.
double derivative(Problem& p, double& x, double h) {
  const double x0 = x;
  x = x0 + h;
  const double f1 = objective(p);
  x = x0 - h;
  const double fm1 = objective(p);
  x = x0 + 2 * h;
  const double f2 = objective(p);
  x = x0 - 2 * h;
  const double fm2 = objective(p);
  x = x0;
  return (8 * (f1 - fm1) - (f2 - fm2)) / (12 * h);
}

struct FdAgreement {
  double worst = 0;  // max |exact - fd| / (1 + |exact|)
  int64_t checked = 0;
};

// Every element of q, k, v that exists (rows and keys that are not padding).
void agree_with_differences(Problem p, FdAgreement& a) {
  const GradOracleResult g = grad_oracle(p);
  const Shape& sh = p.shape;
  const double h = 1e-3;
  auto check = [&](double exact, double& x) {
    const double fd = derivative(p, x, h);
    a.worst = std::max(a.worst, std::abs(exact - fd) / (1 + std::abs(exact)));
    ++a.checked;
  };
  for (int64_t bh = 0; bh < sh.batch * sh.heads; ++bh)
    for (int64_t i = 0; i < sh.q_len; ++i) {
      if (!p.row_exists(bh, i)) continue;
      for (int64_t d = 0; d < sh.head_dim; ++d) check(g.dq[p.q_at(bh, i, d)], p.q[p.q_at(bh, i, d)]);
    }
  for (int64_t kv = 0; kv < sh.batch * sh.kv_head_count(); ++kv)
    for (int64_t j = 0; j < std::min<int64_t>(sh.kv_len, p.kv_len_of(kv / sh.kv_head_count())); ++j) {
      for (int64_t d = 0; d < sh.head_dim; ++d) check(g.dk[p.k_at(kv, j, d)], p.k[p.k_at(kv, j, d)]);
      for (int64_t c = 0; c < sh.value_dim; ++c) check(g.dv[p.v_at(kv, j, c)], p.v[p.v_at(kv, j, c)]);
    }
}

struct Feature {
  const char* name;
  FeatureBits bit;
};
const Feature kFeatures[] = {{"none", 0},
                             {"mask", ATTNCHECK_FEATURE_MASK},
                             {"causal", ATTNCHECK_FEATURE_CAUSAL},
                             {"gqa", ATTNCHECK_FEATURE_GQA},
                             {"lengths", ATTNCHECK_FEATURE_LENGTHS},
                             {"window", ATTNCHECK_FEATURE_WINDOW},
                             {"softcap", ATTNCHECK_FEATURE_SOFTCAP},
                             {"bias", ATTNCHECK_FEATURE_BIAS},
                             {"alibi", ATTNCHECK_FEATURE_ALIBI},
                             {"sinks", ATTNCHECK_FEATURE_SINKS},
                             {"lse", ATTNCHECK_FEATURE_LSE},
                             {"all", kV2Drawn}};

TEST(GradOracle, AgreesWithCentralDifferencesOfTheForward) {
  for (DType t : {DType::f32, DType::f64})
    for (const Feature& f : kFeatures) {
      FdAgreement a;
      for (uint64_t s = 0; s < 4; ++s) {
        // Each feature alone (forced), or all of them drawn and forced together.
        const FeatureBits force = f.bit == kV2Drawn ? kV2Drawn & ~ATTNCHECK_FEATURE_STRIDES : f.bit;
        const Problem p = grad_problem(t, base_seed() + 1000 * s + f.bit, f.bit == kV2Drawn ? kV2Drawn : 0,
                                       force & ~ATTNCHECK_FEATURE_MASK & ~ATTNCHECK_FEATURE_CAUSAL);
        agree_with_differences(p, a);
      }
      std::printf("central differences, %s/%s: %lld elements, worst |exact - fd| / (1 + |exact|) %.3g\n",
                  std::string(dtype_name(t)).c_str(), f.name, static_cast<long long>(a.checked), a.worst);
      EXPECT_GT(a.checked, 0) << f.name;
      // The stencil's truncation (h^4) and the forward's rounding over h: 1.2e-11 at worst when written.
      EXPECT_LT(a.worst, 1e-10) << dtype_name(t) << "/" << f.name;
    }
}

// One batch of 2 heads reading one kv head, 4 rows (the last padding), 5 keys
// (the last padding): with a mask row 1 sees no key, key 3 is seen by no row.
Problem hand_problem(DType t) {
  Problem p = make_problem(t, {1, 2, 4, 5, 3, 2, 1});
  std::mt19937_64 rng(7);
  std::normal_distribution<double> n(0, 1);
  for (double& x : p.q) x = round_to(t, n(rng));
  for (double& x : p.k) x = round_to(t, n(rng));
  for (double& x : p.v) x = round_to(t, n(rng));
  p.q_lens = {3};
  p.kv_lens = {4};
  p.mask.assign(p.shape.mask_size(), 1);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 4; ++i) {
      p.mask[p.mask_at(h, i, 3)] = 0;  // key 3: nobody
      if (i == 1)
        for (int64_t j = 0; j < 5; ++j) p.mask[p.mask_at(h, i, j)] = 0;  // row 1: no key
    }
  fill_dout(p, 3);
  return p;
}

TEST(GradOracle, BoundIsInfiniteExactlyWhereNotJudged) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
    const Problem p = hand_problem(t);
    ASSERT_EQ(p.inconsistency(), "");
    const GradOracleResult g = grad_oracle(p);
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t d = 0; d < 3; ++d) {
          const int64_t at = p.q_at(h, i, d);
          if (i == 1 || i == 3) {  // no key, padding: exact zeros, not judged
            EXPECT_EQ(g.dq[at], 0) << i;
            EXPECT_EQ(g.dq_bound[at], kInf) << i;
          } else {
            EXPECT_TRUE(std::isfinite(g.dq_bound[at]) && g.dq_bound[at] > 0) << dtype_name(t) << " " << i;
            // A few dozen roundings of the dtype on values of order 1.
            EXPECT_LT(g.dq_bound[at], 64 * unit_roundoff(t) * (1 + std::abs(g.dq[at]))) << dtype_name(t);
          }
        }
    for (int64_t j = 0; j < 5; ++j) {
      for (int64_t d = 0; d < 3; ++d) {
        const int64_t at = p.k_at(0, j, d);
        EXPECT_EQ(std::isfinite(g.dk_bound[at]), j != 3 && j != 4) << dtype_name(t) << " " << j;
        if (j >= 3) {
          EXPECT_EQ(g.dk[at], 0);
        }
      }
      for (int64_t c = 0; c < 2; ++c) EXPECT_EQ(std::isfinite(g.dv_bound[p.v_at(0, j, c)]), j != 3 && j != 4);
    }
    // A row outside the domain (a non-finite q) takes its dq and its kv head's
    // dk and dv out of judgement; so does a non-finite dout row. The other head's dq stays judged.
    // So does a row that sees no key but whose products a dense kernel cannot
    // hold (it forms them, then masks: 0 * NaN in every key's dk).
    for (int which = 0; which < 3; ++which) {
      Problem bad = p;
      if (which == 0) bad.q[bad.q_at(1, 2, 0)] = kInf;
      else if (which == 1) bad.dout[bad.out_at(1, 2, 1)] = std::numeric_limits<double>::quiet_NaN();
      else bad.q[bad.q_at(1, 1, 0)] = kInf;  // row 1 sees no key
      const GradOracleResult b = grad_oracle(bad);
      EXPECT_EQ(b.dq_bound[bad.q_at(1, which == 2 ? 1 : 2, 0)], kInf);
      EXPECT_TRUE(std::isfinite(b.dq_bound[bad.q_at(0, 2, 0)]));
      EXPECT_TRUE(std::isfinite(b.dq_bound[bad.q_at(1, 0, 0)]));
      for (double x : b.dk_bound) EXPECT_EQ(x, kInf);
      for (double x : b.dv_bound) EXPECT_EQ(x, kInf);
    }
  }
}

TEST(GradOracle, NanPaddingIsNeverRead) {
  Problem p = hand_problem(DType::f32);
  const GradOracleResult g = grad_oracle(p);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t d = 0; d < 3; ++d) p.q[p.q_at(h, 3, d)] = std::numeric_limits<double>::quiet_NaN();
  for (int64_t d = 0; d < 3; ++d) p.k[p.k_at(0, 4, d)] = std::numeric_limits<double>::quiet_NaN();
  for (int64_t c = 0; c < 2; ++c) p.v[p.v_at(0, 4, c)] = std::numeric_limits<double>::quiet_NaN();
  const GradOracleResult n = grad_oracle(p);
  EXPECT_EQ(g.dq, n.dq);
  EXPECT_EQ(g.dk, n.dk);
  EXPECT_EQ(g.dv, n.dv);
  EXPECT_EQ(g.dq_bound, n.dq_bound);
  EXPECT_EQ(g.dk_bound, n.dk_bound);
  EXPECT_EQ(g.dv_bound, n.dv_bound);
}

Outcome exact_outcome(const GradOracleResult& g) {
  Outcome o;
  o.dq = g.dq;
  o.dk = g.dk;
  o.dv = g.dv;
  return o;
}

TEST(GradOracle, RelativeFaultOfOneMillionthIsFlaggedInF64) {
  int64_t flagged = 0, cases = 0;
  for (uint64_t s = 0; s < 40; ++s) {
    // Without an lse: with one, the backward may normalise with that float (see docs/tolerance.md).
    const Problem p = grad_problem(DType::f64, base_seed() + 77 * s, kV2Drawn & ~ATTNCHECK_FEATURE_LSE, 0, 24, 16);
    const GradOracleResult g = grad_oracle(p);
    Outcome o = exact_outcome(g);
    ASSERT_TRUE(compare_grads_to_oracle(p, g, o).ok());
    for (int tensor = 0; tensor < 3; ++tensor) {
      std::vector<double>& x = tensor == 0 ? o.dq : tensor == 1 ? o.dk : o.dv;
      const std::vector<double>& bound = tensor == 0 ? g.dq_bound : tensor == 1 ? g.dk_bound : g.dv_bound;
      // The judged element of largest magnitude.
      int64_t at = -1;
      for (std::size_t k = 0; k < x.size(); ++k)
        if (std::isfinite(bound[k]) && (at < 0 || std::abs(x[k]) > std::abs(x[at]))) at = static_cast<int64_t>(k);
      if (at < 0 || x[at] == 0) continue;
      ++cases;
      const double keep = x[at];
      x[at] *= 1 + 1e-6;
      const GradComparison c = compare_grads_to_oracle(p, g, o);
      flagged += !c.ok();
      EXPECT_FALSE(c.ok()) << p.header() << " tensor " << tensor << " bound " << bound[at] << " of " << keep;
      x[at] = keep;
    }
  }
  std::printf("f64 gradients off by a relative 1e-6: flagged in %lld of %lld\n", static_cast<long long>(flagged),
              static_cast<long long>(cases));
  EXPECT_GT(cases, 60);
}

TEST(GradOracle, MessageNamesTheWorstElement) {
  const Problem p = hand_problem(DType::f32);
  const GradOracleResult g = grad_oracle(p);
  Outcome o = exact_outcome(g);
  const int64_t at = p.k_at(0, 2, 1);
  o.dk[at] = g.dk[at] + 12 * g.dk_bound[at];
  const GradComparison c = compare_grads_to_oracle(p, g, o);
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.dk.violations, 1);
  EXPECT_EQ(c.dq.violations + c.dv.violations, 0);
  EXPECT_NE(c.message().find("dk[b=0][kv_head=0][j=2][d=1] = "), std::string::npos) << c.message();
  EXPECT_NE(c.message().find("12x over"), std::string::npos) << c.message();
  // Missing gradients are every judged element wrong.
  Outcome none;
  EXPECT_FALSE(compare_grads_to_oracle(p, g, none).ok());
}

// Ratios |got - exact| / bound of one implementation over judged, inexact elements.
struct Ratios {
  std::vector<double> all, case_worst;  // every inexact element; each case's worst
  double worst = 0;
  void add(const GradOracleResult& g, const testing::PlainGrads& x) {
    double here = 0;
    auto one = [&](const std::vector<double>& e, const std::vector<double>& b, const std::vector<double>& got) {
      for (std::size_t k = 0; k < e.size(); ++k) {
        if (!std::isfinite(b[k])) continue;
        const double err = std::abs(got[k] - e[k]);
        if (!(err > 0) && !std::isnan(err)) continue;
        const double r = std::isnan(err) ? kInf : err / b[k];
        all.push_back(r);
        here = std::max(here, r);
      }
    };
    one(g.dq, g.dq_bound, x.dq);
    one(g.dk, g.dk_bound, x.dk);
    one(g.dv, g.dv_bound, x.dv);
    if (here > 0) case_worst.push_back(here);
    worst = std::max(worst, here);
  }
  static double quantile(std::vector<double>& v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
  }
};

TEST(GradOracle, BoundHoldsAndIsApproachedByPlainBackward) {
  // f64 problems whose call passes an lse are apart: their bound lets the
  // backward normalise with that float (docs/tolerance.md), which the plain one does not.
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64})
    for (int variant = 0; variant < 4; ++variant)
      for (bool lse : {false, true}) {
        const bool via_p = variant % 2 == 1, eager16 = variant >= 2;
        if ((lse && t != DType::f64) || (eager16 && compute_dtype(t) == t)) continue;
        Ratios r;
        int64_t cases = 0;
        for (uint64_t s = 0; s < 80; ++s) {
          const unsigned families = s % 3 == 0 ? kClassicFamilies & ~kWide & ~kEdge : kGaussian;
          const FeatureBits drawn = t == DType::f64 ? kV2Drawn & ~ATTNCHECK_FEATURE_LSE : kV2Drawn;
          const FeatureBits forced = lse ? ATTNCHECK_FEATURE_LSE : 0;
          const Problem p = grad_problem(t, base_seed() + 31 * s, drawn, forced, 40, 24, families);
          const GradOracleResult g = grad_oracle(p);
          const testing::PlainGrads x = compute_dtype(t) == DType::f64
                                            ? testing::plain_backward<double>(p, via_p)
                                            : testing::plain_backward<float>(p, via_p, eager16);
          r.add(g, x);
          ++cases;
        }
        const double median = Ratios::quantile(r.all, 0.5), p99 = Ratios::quantile(r.all, 0.99);
        const double case_median = Ratios::quantile(r.case_worst, 0.5);
        std::printf("plain backward (%s%s), %s%s: %lld cases, %zu inexact elements: median %.3g, p99 %.3g, worst %.3g;"
                    " each case's worst: median %.3g\n",
                    via_p ? "D from P" : "D from O", eager16 ? ", eager 16-bit" : "", std::string(dtype_name(t)).c_str(), lse ? " with lse" : "",
                    static_cast<long long>(cases), r.all.size(), median, p99, r.worst, case_median);
        EXPECT_LE(r.worst, 1.0) << dtype_name(t);
        if (lse) continue;
        // Not absurdly loose: a case's worst element of a plain backward comes
        // within a few hundred of the bound, the worst of all within 1/20.
        EXPECT_GT(case_median, 3e-3) << dtype_name(t);
        EXPECT_GT(r.worst, 5e-2) << dtype_name(t);
      }
}

// A scale so small that scale * dS_j is a subnormal float, against keys near
// 1e36 that multiply it back to dq's size (fuzz_gradients found this on
// naive, which forms (scale * dS_j) k_jd as autograd of scale * (Q K^T) does).
// The scaled factor keeps only a few bits there: before the term for factors
// scaled below the smallest normal (docs/tolerance.md, "Gradients", section 9)
// the plain float backward, which forms it the same way, was far over the
// bound. The bound must still flag a dq without its scale (off by 2^136).
TEST(GradOracle, FactorScaledBelowTheSmallestNormal) {
  Problem p = make_problem(DType::f32, {1, 2, 3, 4, 2, 2}, Causal::none, std::ldexp(1.0, -136));
  std::mt19937_64 rng(11);
  std::normal_distribution<double> n(0, 1);
  for (double& x : p.q) x = round_to(p.dtype, n(rng));
  for (double& x : p.k) x = round_to(p.dtype, std::ldexp(n(rng), 122));  // logits near 2^-14: P nearly uniform
  for (double& x : p.v) x = round_to(p.dtype, n(rng));
  fill_dout(p, 5);
  const GradOracleResult g = grad_oracle(p);
  const testing::PlainGrads x = testing::plain_backward<float>(p);
  Ratios r;
  r.add(g, x);
  std::printf("scale 2^-136, keys near 2^122: plain f32 backward's worst element %.3g of the bound\n", r.worst);
  EXPECT_LE(r.worst, 1.0);
  EXPECT_GT(r.worst, 1e-3);  // the plain backward does lose most of those bits
  const testing::PlainGrads unscaled = testing::plain_backward<float>(p, false, false, testing::BackwardFault::dq_unscaled);
  Ratios f;
  f.add(g, unscaled);
  EXPECT_GT(f.worst, 1e6);
}

// The zoo's backward faults, in a plain float backward, flagged in every f32
// case where the fault itself (the same faulty backward in double) moves a
// gradient by more than 4 bounds; and detectable in most cases that use
// what the fault gets wrong.
TEST(GradOracle, BackwardFaultsAreFlagged) {
  using testing::BackwardFault;
  struct Case {
    const char* name;
    BackwardFault fault;
    FeatureBits force;
  };
  const Case faults[] = {{"no_rowsum", BackwardFault::no_rowsum, 0},
                         {"dq_unscaled", BackwardFault::dq_unscaled, 0},
                         {"gqa_first_head", BackwardFault::gqa_first_head, ATTNCHECK_FEATURE_GQA},
                         {"dv_unnormalised", BackwardFault::dv_unnormalised, 0},
                         {"softcap_derivative_dropped", BackwardFault::softcap_derivative_dropped,
                          ATTNCHECK_FEATURE_SOFTCAP}};
  for (const Case& f : faults) {
    int64_t detectable = 0, flagged = 0, cases = 0;
    for (uint64_t s = 0; s < 40; ++s) {
      const Problem p = grad_problem(DType::f32, base_seed() + 53 * s, kV2Drawn, f.force, 24, 16);
      const GradOracleResult g = grad_oracle(p);
      const testing::PlainGrads big = testing::plain_backward<double>(p, false, false, f.fault);
      const testing::PlainGrads small = testing::plain_backward<float>(p, false, false, f.fault);
      Ratios shift, seen;
      shift.add(g, big);
      seen.add(g, small);
      ++cases;
      if (shift.worst > 4) {
        ++detectable;
        flagged += seen.worst > 1;
        EXPECT_GT(seen.worst, 1) << f.name << ": " << p.header();
      }
    }
    std::printf("fault %s: flagged in %lld of %lld detectable f32 cases (of %lld)\n", f.name,
                static_cast<long long>(flagged), static_cast<long long>(detectable), static_cast<long long>(cases));
    EXPECT_GE(detectable, cases / 2) << f.name;
  }
}

// A long row completes with every gradient and bound finite: B1 L1024 D64,
// f32 on 2 heads and f64 (its x87 path) on 1, unit Gaussian inputs, no
// padding, so every element is judged. How long it takes is a measurement,
// not a verdict: bench/grad_oracle_bench.cpp (`attncheck_bench
// --benchmark_filter=grad_oracle/`) times B1H8 f32 and B1H2 f64.
TEST(GradOracle, LargeProblemCompletes) {
  for (DType t : {DType::f32, DType::f64}) {
    const int64_t heads = t == DType::f64 ? 1 : 2;
    Problem p = make_problem(t, {1, heads, 1024, 1024, 64, 64}, Causal::none);
    std::mt19937_64 rng(11);
    std::normal_distribution<double> n(0, 1);
    for (double& x : p.q) x = round_to(t, n(rng));
    for (double& x : p.k) x = round_to(t, n(rng));
    for (double& x : p.v) x = round_to(t, n(rng));
    fill_dout(p, 5);
    const GradOracleResult g = grad_oracle(p);
    for (const std::vector<double>* v : {&g.dq, &g.dk, &g.dv, &g.dq_bound, &g.dk_bound, &g.dv_bound}) {
      ASSERT_EQ(v->size(), v == &g.dq || v == &g.dq_bound ? p.q.size() : v == &g.dk || v == &g.dk_bound ? p.k.size() : p.v.size());
      const auto bad = std::find_if(v->begin(), v->end(), [](double x) { return !std::isfinite(x); });
      EXPECT_EQ(bad, v->end()) << dtype_name(t) << ": element " << (bad - v->begin()) << " is " << *bad;
    }
  }
}

}  // namespace
}  // namespace attncheck
