// The oracle on ABI v2 problems (docs/tolerance.md, "Version 2"):
//  - its exact out and lse against the spec's formulas evaluated directly in
//    __float128 (tests/support/spec_reference_quad.h), each feature alone and
//    all together;
//  - its bound against straightforward implementations in f32, f16, bf16 and
//    f64 (tests/support/plain_v2_attention.h): never exceeded;
//  - padding rows and keys (NaN) never read;
//  - the faults the v2 features invite (sinks ignored, ALiBi's sign, a window
//    off by one, the wrong kv head, the soft-cap ignored, lse in base 2) flagged.
// ATTNCHECK_SEED shifts every seed.
#include <quadmath.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "driver/seed_env.h"
#include "oracle/oracle.h"
#include "oracle/oracle_paths.h"
#include "plain_v2_attention.h"
#include "gen/generators.h"
#include "spec_reference_quad.h"

namespace attncheck {
namespace {

uint64_t base_seed() { return seed_from_env_or(20261130); }

// Every feature beyond a v1 call's (MASK and CAUSAL are drawn as always).
constexpr FeatureBits kV2Drawn = kAllFeatures & ~kV1Features;

// A small problem from the generators: the v2 features in `features` drawn
// each at the generators' own rate (src/gen/feature_draws.h), those in
// `force` always (GenOptions::required; GQA where the shape allows).
Problem v2_problem(DType t, uint64_t seed, FeatureBits features, FeatureBits force, unsigned families = kClassicFamilies,
                   int64_t min_heads = 1) {
  GenOptions g;
  g.dtypes = {t};
  g.min_heads = min_heads;
  g.max_heads = 6;
  g.max_q_len = g.max_kv_len = 24;
  g.max_head_dim = g.max_value_dim = 16;
  g.families = families;
  g.features = kV1Features | features | force;
  g.required = force & ~kV1Features;
  const Problem p = sample_problem(g, seed, static_cast<int>(seed % 101));
  EXPECT_EQ(p.inconsistency(), "") << p.header();
  // What the forced features' tests count on: each is there (a grouped shape
  // needs heads > 1; a drawn layout may come out dense).
  const FeatureBits sure = g.required & ~(ATTNCHECK_FEATURE_GQA | ATTNCHECK_FEATURE_STRIDES);
  EXPECT_EQ(p.features() & sure, sure) << p.header();
  return p;
}

struct SpecAgreement {
  double worst_out = 0, worst_lse = 0;  // max (|oracle - quad| - its rounding to double) / bound
  double over_out = 0, over_lse = 0;    // max |oracle - quad| / bound
  int64_t judged_out = 0, judged_lse = 0, empty_rows = 0;
};

// |x - q| beyond the rounding of q to double, which the bound's store term allows.
double beyond_rounding(double x, __float128 q) {
  const __float128 apart = fabsq(static_cast<__float128>(x) - q);
  const __float128 rounding = fabsq(q) * static_cast<__float128>(0x1p-53);
  return apart > rounding ? static_cast<double>(apart - rounding) : 0.0;
}

void agree_with_spec(const Problem& p, SpecAgreement& a) {
  const OracleResult o = oracle(p);
  const testing::QuadAttention q = testing::spec_attention_quad(p);
  const Shape& sh = p.shape;
  for (int64_t bh = 0; bh < sh.batch * sh.heads; ++bh)
    for (int64_t i = 0; i < sh.q_len; ++i) {
      const int64_t row = bh * sh.q_len + i;
      const bool exists = i < p.q_len_of(bh / sh.heads);
      if (!exists) {
        EXPECT_TRUE(std::isinf(o.lse_bound[row]) && !o.row_in_domain[row]) << p.header() << " padding row " << row;
        for (int64_t c = 0; c < sh.value_dim; ++c) EXPECT_TRUE(std::isinf(o.bound[p.out_at(bh, i, c)]));
        continue;
      }
      const bool empty = !p.row_sees_any_key(bh, i);
      EXPECT_EQ(empty, std::isnan(o.entropy[row])) << p.header() << " row " << row;
      if (empty) {
        ++a.empty_rows;
        EXPECT_EQ(o.lse_exact[row], static_cast<double>(q.lse[row])) << p.header() << " empty row " << row;
        continue;
      }
      if (std::isfinite(o.lse_bound[row])) {
        ++a.judged_lse;
        a.worst_lse = std::max(a.worst_lse, beyond_rounding(o.lse_exact[row], q.lse[row]) / o.lse_bound[row]);
        a.over_lse = std::max(a.over_lse, static_cast<double>(fabsq(o.lse_exact[row] - q.lse[row])) / o.lse_bound[row]);
      }
      for (int64_t c = 0; c < sh.value_dim; ++c) {
        const int64_t at = p.out_at(bh, i, c);
        if (std::isinf(o.bound[at])) continue;
        ++a.judged_out;
        a.worst_out = std::max(a.worst_out, beyond_rounding(o.exact[at], q.out[at]) / o.bound[at]);
        a.over_out = std::max(a.over_out, static_cast<double>(fabsq(o.exact[at] - q.out[at])) / o.bound[at]);
      }
    }
}

// How far inside the bound the oracle's exact values must be: its own share.
// (The f64 path's careful rows run in long double, whose share reaches a few
// percent of the bound where outputs cancel: docs/tolerance.md.) On values
// whose logits double cannot hold exactly (the wide and edge families: logits
// of 1e36 that differ by less than their rounding) the oracle's own error is
// large too, and counted in the bound: there only |oracle - quad| <= bound holds.
double own_share(DType t) { return t == DType::f64 ? 0.05 : 1e-3; }
constexpr unsigned kExactFamilies = kAllFamilies & ~(kWide | kEdge);

TEST(OracleV2, MatchesTheSpecInQuadEachFeatureAloneAndAll) {
  const FeatureBits alone[] = {ATTNCHECK_FEATURE_GQA,    ATTNCHECK_FEATURE_LENGTHS, ATTNCHECK_FEATURE_WINDOW,
                               ATTNCHECK_FEATURE_SOFTCAP, ATTNCHECK_FEATURE_BIAS,   ATTNCHECK_FEATURE_ALIBI,
                               ATTNCHECK_FEATURE_SINKS,  kV2Drawn};
  for (FeatureBits f : alone)
    for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
      SpecAgreement a, wide;
      for (uint64_t k = 0; k < 40; ++k) {
        const uint64_t seed = base_seed() + 1000 * f + k;
        agree_with_spec(v2_problem(t, seed, f == kV2Drawn ? kV2Drawn : 0, f, kExactFamilies), a);
        agree_with_spec(v2_problem(t, seed, f == kV2Drawn ? kV2Drawn : 0, f, kWide | kEdge), wide);
        if (HasFailure()) return;
      }
      SCOPED_TRACE(feature_list(f) + " " + std::string(dtype_name(t)));
      EXPECT_GT(a.judged_out, 200);
      EXPECT_GT(a.judged_lse, 20);
      EXPECT_LT(a.worst_out, own_share(t));
      EXPECT_LT(a.worst_lse, own_share(t));
      EXPECT_LE(wide.over_out, 1.0);
      EXPECT_LE(wide.over_lse, 1.0);
      std::printf("%-36s %-4s out %6lld judged, %.2g bounds apart; lse %5lld, %.2g; %lld empty rows; wide/edge %.2g, %.2g\n",
                  feature_list(f).c_str(), std::string(dtype_name(t)).c_str(), static_cast<long long>(a.judged_out),
                  a.worst_out, static_cast<long long>(a.judged_lse), a.worst_lse, static_cast<long long>(a.empty_rows),
                  wide.over_out, wide.over_lse);
    }
}

struct Worst {
  double out = 0, lse = 0;
  int64_t cases = 0;
};

template <class T> void judge(const Problem& p, const OracleResult& o, const testing::PlainResult& r, Worst& w,
                              const char* what) {
  const Comparison c = compare_to_oracle(p, o, r.out);
  const Comparison l = compare_lse_to_oracle(p, o, r.lse);
  EXPECT_TRUE(c.ok) << what << ": " << p.header() << " out worst ratio " << c.worst_ratio << " at " << c.worst_index
                    << " (exact " << o.exact[c.worst_index] << ", got " << r.out[c.worst_index] << ", bound "
                    << o.bound[c.worst_index] << ")";
  EXPECT_TRUE(l.ok) << what << ": " << p.header() << " lse worst ratio " << l.worst_ratio << " at row " << l.worst_index
                    << " (exact " << o.lse_exact[l.worst_index] << ", got " << r.lse[l.worst_index] << ", bound "
                    << o.lse_bound[l.worst_index] << ")";
  w.out = std::max(w.out, c.worst_ratio);
  w.lse = std::max(w.lse, l.worst_ratio);
  ++w.cases;
}

TEST(OracleV2, BoundCoversStraightforwardImplementations) {
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    Worst two_pass, eager, streaming;
    const uint64_t n = std::getenv("ATTNCHECK_V2_CASES") ? std::strtoull(std::getenv("ATTNCHECK_V2_CASES"), nullptr, 10) : 1500;
    for (uint64_t k = 0; k < n; ++k) {
      const Problem p = v2_problem(t, base_seed() + 77 * k + 5, kV2Drawn, 0, kAllFamilies);
      const OracleResult o = oracle(p);
      if (t == DType::f64) {
        judge<double>(p, o, testing::plain_two_pass<double>(p, false), two_pass, "two-pass");
        judge<double>(p, o, testing::plain_streaming<double>(p), streaming, "streaming");
      } else {
        judge<float>(p, o, testing::plain_two_pass<float>(p, false), two_pass, "two-pass");
        judge<float>(p, o, testing::plain_streaming<float>(p), streaming, "streaming");
        if (t != DType::f32) judge<float>(p, o, testing::plain_two_pass<float>(p, true), eager, "eager 16-bit");
      }
      if (HasFailure()) return;
    }
    std::printf("%-4s worst error/bound: two-pass out %.3g lse %.3g; streaming out %.3g lse %.3g; eager 16-bit out %.3g lse %.3g\n",
                std::string(dtype_name(t)).c_str(), two_pass.out, two_pass.lse, streaming.out, streaming.lse, eager.out,
                eager.lse);
  }
}

// Replaces every padding value (q rows past q_lens, k and v keys past kv_lens,
// the bias there when it is per batch) with `x`.
Problem refill_padding(Problem p, double x) {
  const Shape& sh = p.shape;
  const int64_t kvh = sh.kv_head_count();
  for (int64_t b = 0; b < sh.batch; ++b) {
    for (int64_t h = 0; h < sh.heads; ++h)
      for (int64_t i = p.q_len_of(b); i < sh.q_len; ++i)
        for (int64_t d = 0; d < sh.head_dim; ++d) p.q[p.q_at(b * sh.heads + h, i, d)] = x;
    for (int64_t g = 0; g < kvh; ++g)
      for (int64_t j = p.kv_len_of(b); j < sh.kv_len; ++j) {
        for (int64_t d = 0; d < sh.head_dim; ++d) p.k[p.k_at(b * kvh + g, j, d)] = x;
        for (int64_t c = 0; c < sh.value_dim; ++c) p.v[p.v_at(b * kvh + g, j, c)] = x;
      }
  }
  if (p.has_bias() && p.bias_broadcast.per_batch)
    for (int64_t b = 0; b < sh.batch; ++b)
      for (int64_t h = 0; h < (p.bias_broadcast.per_head ? sh.heads : 1); ++h)
        for (int64_t i = 0; i < (p.bias_broadcast.per_row ? sh.q_len : 1); ++i)
          for (int64_t j = 0; j < sh.kv_len; ++j)
            if (j >= p.kv_len_of(b) || (p.bias_broadcast.per_row && i >= p.q_len_of(b)))
              p.bias[p.bias_broadcast.at(sh, b, h, i, j)] = x;
  return p;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (!(a[k] == b[k] || (std::isnan(a[k]) && std::isnan(b[k])))) return false;
  return true;
}

TEST(OracleV2, PaddingIsNeverRead) {
  int64_t padded = 0;
  for (DType t : {DType::f32, DType::f64, DType::f16}) {
    for (uint64_t k = 0; k < 90; ++k) {
      // The generators' padding (NaN, huge, or garbage) made NaN throughout.
      const Problem with_nan = refill_padding(v2_problem(t, base_seed() + 31 * k, kV2Drawn, ATTNCHECK_FEATURE_LENGTHS),
                                              std::numeric_limits<double>::quiet_NaN());
      const OracleResult a = oracle(with_nan);
      for (double x : {0.0, 1e30, -3.0}) {
        const OracleResult b = oracle(refill_padding(with_nan, round_to(t, x)));
        EXPECT_TRUE(same_bits(a.exact, b.exact) && same_bits(a.bound, b.bound)) << with_nan.header();
        EXPECT_TRUE(same_bits(a.lse_exact, b.lse_exact) && same_bits(a.lse_bound, b.lse_bound)) << with_nan.header();
        EXPECT_EQ(a.row_in_domain, b.row_in_domain) << with_nan.header();
      }
      for (int64_t r = 0; r < with_nan.shape.rows(); ++r) padded += a.row_in_domain[r];
      if (HasFailure()) return;
    }
  }
  EXPECT_GT(padded, 1000);  // rows with NaN padding beside them were judged
}

// The lse is stored in float. An f64 row whose logit cancels from terms near
// 1e308 (q = (x, -x, 1), k = (1, 1, 1): the dot is 1 summed in order, 0 with the
// last term first) has an lse bound far beyond float's range, so a correct
// implementation's lse may round to an inf: found by validate_bound --v2, where
// online (another summation order) stored -inf for such rows. An inf on a side
// the allowed interval reaches passes; on the other side, or with a bound float
// holds, or with a soft-cap, it fails, as NaN always does.
TEST(OracleV2, AnLseWhoseBoundLeavesFloatMayBeStoredAsInf) {
  Problem p = make_problem(DType::f64, Shape{1, 1, 1, 1, 3, 1}, Causal::none, 1.0);  // [1][1][1][3], one key
  p.q = {0x1p1020, -0x1p1020, 1};
  p.k = {1, 1, 1};
  p.v = {2};
  p.lse_requested = true;
  ASSERT_EQ(p.inconsistency(), "");
  const OracleResult o = oracle(p);
  ASSERT_EQ(o.lse_exact[0], 1.0);
  ASSERT_TRUE(std::isfinite(o.lse_bound[0]));
  ASSERT_GT(o.lse_bound[0], 1e39);  // about 3e292: float holds at most 3.4e38
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(compare_lse_to_oracle(p, o, {0.0}).ok);   // the dot summed with its last term first
  EXPECT_TRUE(compare_lse_to_oracle(p, o, {-inf}).ok);  // a logit of -1e292 stored in float
  EXPECT_TRUE(compare_lse_to_oracle(p, o, {inf}).ok);
  EXPECT_FALSE(compare_lse_to_oracle(p, o, {std::numeric_limits<double>::quiet_NaN()}).ok);
  // With a soft-cap the logit is within c whatever the dot's error: no inf
  // (the bound stays as wide, through tanh's pass-through).
  Problem capped = p;
  capped.softcap = 5;
  const OracleResult oc = oracle(capped);
  ASSERT_TRUE(std::isfinite(oc.lse_bound[0]));
  EXPECT_TRUE(compare_lse_to_oracle(capped, oc, {oc.lse_exact[0]}).ok);
  EXPECT_FALSE(compare_lse_to_oracle(capped, oc, {-inf}).ok);
  EXPECT_FALSE(compare_lse_to_oracle(capped, oc, {inf}).ok);

  // An ordinary row: its bound is tiny, and an inf on either side is wrong.
  Problem q = make_problem(DType::f64, Shape{1, 1, 1, 2, 1, 1});  // one query, two keys
  q.q = {1};
  q.k = {0.5, -0.25};
  q.v = {2, 3};
  q.lse_requested = true;
  const OracleResult oq = oracle(q);
  ASSERT_LT(oq.lse_bound[0], 1e-5);  // the store to float: about 1e-7
  EXPECT_TRUE(compare_lse_to_oracle(q, oq, {oq.lse_exact[0]}).ok);
  EXPECT_FALSE(compare_lse_to_oracle(q, oq, {-inf}).ok);
  EXPECT_FALSE(compare_lse_to_oracle(q, oq, {inf}).ok);
}

// A fault of one feature: what the faulty implementation computes, as a
// straightforward implementation of a changed problem (or a changed lse).
struct Fault {
  const char* name;
  FeatureBits feature;
  Problem (*change)(Problem);
  bool lse_base2 = false;
};

Problem ignore_sinks(Problem p) { p.sinks.clear(); return p; }
Problem alibi_sign(Problem p) { for (double& s : p.alibi_slopes) s = -s; return p; }
Problem window_off_by_one(Problem p) {
  if (p.window_left >= 0) ++p.window_left; else ++p.window_right;
  return p;
}
Problem ignore_softcap(Problem p) { p.softcap = 0; return p; }
// Reads kv head h % kv_heads instead of h / (heads / kv_heads): the keys of
// query head h laid out where kv_of expects them, for a problem of kv_heads = heads.
Problem kv_head_modulo(Problem p) {
  const Shape sh = p.shape;
  const int64_t kvh = sh.kv_head_count();
  std::vector<double> k(sh.batch * sh.heads * sh.kv_len * sh.head_dim), v(sh.batch * sh.heads * sh.kv_len * sh.value_dim);
  for (int64_t b = 0; b < sh.batch; ++b)
    for (int64_t h = 0; h < sh.heads; ++h) {
      const int64_t from = b * kvh + h % kvh, to = b * sh.heads + h;
      std::copy_n(&p.k[from * sh.kv_len * sh.head_dim], sh.kv_len * sh.head_dim, &k[to * sh.kv_len * sh.head_dim]);
      std::copy_n(&p.v[from * sh.kv_len * sh.value_dim], sh.kv_len * sh.value_dim, &v[to * sh.kv_len * sh.value_dim]);
    }
  p.k = std::move(k);
  p.v = std::move(v);
  p.shape.kv_heads = sh.heads;
  return p;
}
Problem unchanged(Problem p) { return p; }

TEST(OracleV2, FeatureFaultsAreFlagged) {
  const Fault faults[] = {{"sinks ignored", ATTNCHECK_FEATURE_SINKS, ignore_sinks},
                          {"ALiBi sign", ATTNCHECK_FEATURE_ALIBI, alibi_sign},
                          {"window off by one", ATTNCHECK_FEATURE_WINDOW, window_off_by_one},
                          {"softcap ignored", ATTNCHECK_FEATURE_SOFTCAP, ignore_softcap},
                          {"kv head h % kv_heads", ATTNCHECK_FEATURE_GQA, kv_head_modulo},
                          {"lse in base 2", ATTNCHECK_FEATURE_LSE, unchanged, true}};
  for (const Fault& f : faults)
    for (DType t : {DType::f32, DType::f64}) {
      int64_t flagged = 0, changed = 0;
      // 400 cases: a fault shows only where its feature is drawn in a form it
      // changes (a window side the causal rule does not already cut; kv_heads
      // neither 1 nor heads, where h / group and h % kv_heads agree).
      for (uint64_t k = 0; k < 400; ++k) {
        const Problem p = v2_problem(t, base_seed() + 7919 * k + f.feature, kV2Drawn, f.feature | ATTNCHECK_FEATURE_LSE,
                                     kClassicFamilies, f.feature == ATTNCHECK_FEATURE_GQA ? 4 : 1);
        const OracleResult o = oracle(p);
        const Problem faulty = f.change(p);
        testing::PlainResult r =
            t == DType::f64 ? testing::plain_streaming<double>(faulty) : testing::plain_streaming<float>(faulty);
        if (f.lse_base2)
          for (double& x : r.lse) x = static_cast<float>(x / std::log(2.0));
        // The fault shows where the faulty problem's exact values differ from the
        // right ones by more than 4 bounds somewhere judged.
        const OracleResult wrong = f.lse_base2 ? o : oracle(faulty);
        bool shows = false;
        for (std::size_t e = 0; e < o.exact.size(); ++e)
          shows |= std::isfinite(o.bound[e]) && std::abs(wrong.exact[e] - o.exact[e]) > 4 * o.bound[e];
        for (std::size_t e = 0; e < o.lse_exact.size(); ++e) {
          const double got = f.lse_base2 ? r.lse[e] : wrong.lse_exact[e];
          shows |= std::isfinite(o.lse_bound[e]) && std::isfinite(got) && std::abs(got - o.lse_exact[e]) > 4 * o.lse_bound[e];
        }
        if (!shows) continue;
        ++changed;
        flagged += !(compare_to_oracle(p, o, r.out).ok && compare_lse_to_oracle(p, o, r.lse).ok);
      }
      SCOPED_TRACE(std::string(f.name) + " " + std::string(dtype_name(t)));
      EXPECT_GT(changed, 30);
      EXPECT_EQ(flagged, changed);
      std::printf("%-22s %-4s flagged in %lld of %lld cases where it shows\n", f.name, std::string(dtype_name(t)).c_str(),
                  static_cast<long long>(flagged), static_cast<long long>(changed));
    }
}

}  // namespace
}  // namespace attncheck
