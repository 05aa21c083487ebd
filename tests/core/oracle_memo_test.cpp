// The oracle's memo (src/oracle/oracle_memo.h): a problem seen before gets
// the same result without being evaluated again, and only the same problem
// does. "The same" is every field the forward oracle reads, bit for bit; the
// call's layouts, a dout and the lse request are not among them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "oracle/oracle.h"
#include "oracle/oracle_memo.h"
#include "gen/generators.h"

namespace attncheck {
namespace {

using oracle_detail::memo_counts;
using oracle_detail::memo_key;

Problem drawn(uint64_t seed, FeatureBits features = kAllFeatures) {
  GenOptions g;
  g.dtypes = {DType::f32, DType::f16};
  g.max_q_len = g.max_kv_len = 12;
  g.max_head_dim = g.max_value_dim = 8;
  g.features = features;
  return sample_problem(g, seed, 60);
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

void expect_same(const OracleResult& a, const OracleResult& b) {
  EXPECT_TRUE(same_bits(a.exact, b.exact));
  EXPECT_TRUE(same_bits(a.bound, b.bound));
  EXPECT_TRUE(same_bits(a.entropy, b.entropy));
  EXPECT_TRUE(same_bits(a.lse_exact, b.lse_exact));
  EXPECT_TRUE(same_bits(a.lse_bound, b.lse_bound));
  EXPECT_EQ(a.row_in_domain, b.row_in_domain);
}

TEST(OracleMemo, ASecondCallIsAHitWithTheSameResult) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const Problem p = drawn(seed);
    const OracleResult first = oracle(p);
    const auto before = memo_counts();
    const OracleResult again = oracle(p);
    const auto after = memo_counts();
    EXPECT_EQ(after.hits, before.hits + 1) << p.header();
    expect_same(first, again);
  }
}

TEST(OracleMemo, WhatTheOracleDoesNotReadDoesNotMatter) {
  Problem p = drawn(101);
  const OracleResult plain = oracle(p);
  Problem other = p;
  other.layouts.q.gap = {0, 0, 3};
  other.layouts.out.order = {2, 1, 0};
  other.lse_requested = !p.lse_requested;
  other.dout.assign(p.shape.out_size(), 0.5);
  ASSERT_EQ(memo_key(p), memo_key(other));
  const auto before = memo_counts();
  expect_same(plain, oracle(other));
  EXPECT_EQ(memo_counts().hits, before.hits + 1);
}

// One change the oracle would see, each on its own: every one gives another key.
TEST(OracleMemo, EveryInputTheOracleReadsIsInTheKey) {
  Problem p = drawn(7);
  p.shape.kv_heads = p.shape.heads;  // written out
  const std::optional<std::string> key = memo_key(p);
  ASSERT_TRUE(key.has_value());
  auto differs = [&](const char* what, auto change) {
    Problem c = p;
    change(c);
    EXPECT_NE(memo_key(c), key) << what;
  };
  differs("a q value", [](Problem& c) { c.q[0] = std::nextafter(c.q[0], 1e9); });
  differs("a k value's sign of zero", [](Problem& c) { c.k[0] = c.k[0] == 0 && !std::signbit(c.k[0]) ? -0.0 : 0.0; });
  differs("a v value", [](Problem& c) { c.v.back() += 1; });
  differs("a NaN's payload", [](Problem& c) {
    uint64_t bits = 0x7ff8000000000123ull;
    std::memcpy(&c.q[0], &bits, sizeof bits);
  });
  differs("the dtype", [](Problem& c) { c.dtype = c.dtype == DType::f32 ? DType::f64 : DType::f32; });
  differs("the causal rule", [](Problem& c) { c.causal = c.causal == Causal::none ? Causal::top_left : Causal::none; });
  differs("the scale", [](Problem& c) { c.scale = 0.25; });
  differs("the soft-cap", [](Problem& c) { c.softcap += 5; });
  differs("the window", [](Problem& c) { c.window_left += 1; });
  differs("a mask", [](Problem& c) { c.mask.assign(c.shape.mask_size(), 1); c.mask_broadcast = {}; });
  differs("a bias", [](Problem& c) { c.bias.assign(c.shape.mask_size(), 0.0); c.bias_broadcast = {}; });
  differs("the sinks", [](Problem& c) { c.sinks.assign(c.shape.heads, 0.0); });
  differs("the ALiBi slopes", [](Problem& c) { c.alibi_slopes.assign(c.shape.heads, 0.0); });
  differs("the lengths", [](Problem& c) { c.kv_lens.assign(c.shape.batch, 1); });
  differs("the query lengths", [](Problem& c) { c.q_lens.assign(c.shape.batch, 1); });
  differs("the shape", [](Problem& c) { c.shape.value_dim += 1; c.v.resize(c.shape.v_size(), 0.0); });
}

// A tensor of another shape with the same bytes must not collide: each
// vector's length is part of the key.
TEST(OracleMemo, LengthsSeparateTheTensors) {
  Problem a = make_problem(DType::f32, Shape{1, 1, 2, 2, 1, 1});
  Problem b = a;
  b.q.push_back(b.k.front());
  b.k.erase(b.k.begin());
  EXPECT_NE(memo_key(a), memo_key(b));
}

TEST(OracleMemo, LongContextProblemsAreNotKept) {
  Problem p = make_problem(DType::f32, Shape{1, 1, 1, 8192, 64, 16});
  EXPECT_FALSE(memo_key(p).has_value());
  const auto before = memo_counts();
  (void)oracle(p);
  (void)oracle(p);
  const auto after = memo_counts();
  EXPECT_EQ(after.hits, before.hits);
  EXPECT_EQ(after.misses, before.misses);
}

}  // namespace
}  // namespace attncheck
