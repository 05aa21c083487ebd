// The v2 zoo: each member is correct attention with exactly one v2 feature
// wrong. For each, a small hand-made Problem that uses the feature shows the
// member's output (or lse) differs from `reference` far beyond rounding, and
// the same Problem without the feature (or with only its neighbours) shows it
// agrees with `reference` to rounding: the fault is in that feature and
// nowhere else. Run through make_builtin, so every call is encoded as the
// checker encodes it (call_layout.h: NaN in gaps, guards around outputs).
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "impls/builtins.h"
#include "impls/in_process.h"
#include "problem/problem.h"

namespace attncheck {
namespace {

// Far beyond f32 rounding of O(1) outputs over a handful of keys (~1e-7),
// far below what any of the faults below changes (>= 1e-2 on these problems).
constexpr double kAgree = 1e-5;
constexpr double kDiffer = 1e-3;

// A problem of this shape with fixed, varied values: multiples of 1/16 in
// [-1, 1) (exact in every dtype), from a small LCG so that no two rows match.
Problem filled(const Shape& shape, Causal causal = Causal::none) {
  Problem p = make_problem(DType::f32, shape, causal);
  uint32_t state = 12345;
  const auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return static_cast<double>(static_cast<int>((state >> 16) % 32) - 16) / 16.0;
  };
  for (std::vector<double>* t : {&p.q, &p.k, &p.v})
    for (double& x : *t) x = next();
  return p;
}

void add_bias(Problem& p) {
  p.bias.assign(static_cast<std::size_t>(p.bias_broadcast.size(p.shape)), 0.0);
  for (std::size_t n = 0; n < p.bias.size(); ++n) p.bias[n] = static_cast<double>(static_cast<int>(n % 7) - 3) / 4.0;
}

struct Gap {
  double out = 0, lse = 0;  // largest |member - reference| (NaN on one side only: infinity)
};

double largest_gap(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double gap = 0;
  for (std::size_t n = 0; n < a.size(); ++n) {
    if (std::isnan(a[n]) || std::isnan(b[n])) {
      if (std::isnan(a[n]) != std::isnan(b[n])) return INFINITY;
      continue;
    }
    if (a[n] == b[n]) continue;  // equal infinities included
    gap = std::max(gap, std::abs(a[n] - b[n]));
  }
  return gap;
}

// Runs the member and reference on p (both must answer ok).
Gap gap_to_reference(const std::string& member, const Problem& p) {
  EXPECT_EQ(p.inconsistency(), "");
  const Outcome want = make_builtin("reference")->run(p);
  const Outcome got = make_builtin(member)->run(p);
  EXPECT_EQ(want.status, CallStatus::ok) << want.message;
  EXPECT_EQ(got.status, CallStatus::ok) << member << ": " << got.message;
  return {largest_gap(got.out, want.out), largest_gap(got.lse, want.lse)};
}

void expect_agrees(const std::string& member, const Problem& p) {
  const Gap g = gap_to_reference(member, p);
  EXPECT_LT(g.out, kAgree) << member << " on " << p.header();
  EXPECT_LT(g.lse, kAgree) << member << " lse on " << p.header();
}

void expect_out_differs(const std::string& member, const Problem& p) {
  EXPECT_GT(gap_to_reference(member, p).out, kDiffer) << member << " on " << p.header();
}

TEST(ZooV2, EveryMemberDeclaresEveryFeatureAndKeepsAV1Entry) {
  for (const char* name : {"gqa_kv_modulo", "strides_ignored", "padding_keys_attended", "window_off_by_one",
                           "window_top_left", "softcap_after_bias", "alibi_sign_flipped", "sinks_ignored",
                           "lse_base2"}) {
    const BuiltinInfo* b = find_builtin(name);
    ASSERT_NE(b, nullptr) << name;
    EXPECT_EQ(b->kind, BuiltinKind::zoo) << name;
    EXPECT_EQ(b->features, kAllFeatures) << name;
    EXPECT_NE(b->forward, nullptr) << name;
    EXPECT_NE(b->forward_v2, nullptr) << name;
    // A v1-expressible problem through the v1 entry agrees with reference.
    Problem p = filled({1, 2, 3, 4, 4, 3}, Causal::bottom_right);
    const Outcome want = make_builtin("reference")->run(p);
    InProcessImplementation v1(name, b->forward);
    const Outcome got = v1.run(p);
    ASSERT_EQ(got.status, CallStatus::ok) << name << ": " << got.message;
    EXPECT_LT(largest_gap(got.out, want.out), kAgree) << name;
  }
}

TEST(ZooV2, GqaKvModulo) {
  Problem p = filled({1, 4, 3, 5, 4, 3, 2});  // heads 4 read kv heads 0 0 1 1, not 0 1 0 1
  expect_out_differs("gqa_kv_modulo", p);
  expect_agrees("gqa_kv_modulo", filled({1, 4, 3, 5, 4, 3, 4}));  // no grouping
  expect_agrees("gqa_kv_modulo", filled({1, 4, 3, 5, 4, 3, 1}));  // one kv head: h % 1 == h / 4
}

TEST(ZooV2, StridesIgnored) {
  Problem p = filled({2, 2, 3, 4, 4, 3});
  expect_agrees("strides_ignored", p);  // dense BHSD
  p.layouts.q = {{0, 2, 1}, {0, 0, 0}};  // FlashAttention's [batch][row][head][col]
  expect_out_differs("strides_ignored", p);
  p.layouts.q = {};
  p.layouts.k.gap = {0, 0, 2};  // two elements between key rows
  expect_out_differs("strides_ignored", p);
  p.layouts.k = {};
  p.layouts.out = {{0, 2, 1}, {1, 0, 3}};  // out's own strides are honoured
  expect_agrees("strides_ignored", p);
}

TEST(ZooV2, PaddingKeysAttended) {
  Problem p = filled({2, 2, 3, 5, 4, 3});
  expect_agrees("padding_keys_attended", p);
  p.kv_lens = {5, 5};  // lengths sent, nothing padded
  expect_agrees("padding_keys_attended", p);
  p.kv_lens = {3, 5};  // keys 3 and 4 of batch 0 are padding (finite values here)
  expect_out_differs("padding_keys_attended", p);
  p.kv_lens = {5, 5};
  p.q_lens = {2, 3};  // padded rows are a different feature
  expect_agrees("padding_keys_attended", p);
}

TEST(ZooV2, WindowOffByOne) {
  Problem p = filled({1, 2, 4, 4, 4, 3}, Causal::bottom_right);
  expect_agrees("window_off_by_one", p);
  p.window_right = 1;  // the right edge is not where the fault is
  p.causal = Causal::none;
  expect_agrees("window_off_by_one", p);
  p.window_left = 1;  // keys d_i - 1 .. d_i, not d_i alone
  expect_out_differs("window_off_by_one", p);
}

TEST(ZooV2, WindowTopLeft) {
  // q_len 2 < kv_len 5: bottom-right diagonal d_i = i + 3, top-left would be i.
  Problem p = filled({1, 2, 2, 5, 4, 3});
  expect_agrees("window_top_left", p);
  p.causal = Causal::bottom_right;
  expect_agrees("window_top_left", p);  // the causal rule itself is right
  p.window_left = 1;
  expect_out_differs("window_top_left", p);
  p.window_left = -1;
  p.causal = Causal::none;
  p.alibi_slopes = {0.5, 0.25};
  expect_out_differs("window_top_left", p);
  p.causal = Causal::top_left;  // d_i = i is right here, for the window and ALiBi alike
  p.window_left = 1;
  expect_agrees("window_top_left", p);
  p = filled({1, 2, 4, 4, 4, 3}, Causal::bottom_right);  // Lq == Lk: the two diagonals coincide
  p.window_left = 1;
  p.alibi_slopes = {0.5, 0.25};
  expect_agrees("window_top_left", p);
}

TEST(ZooV2, SoftcapAfterBias) {
  Problem p = filled({1, 2, 3, 4, 4, 3});
  p.scale = 2.0;  // logits up to ~8: tanh(z / 1) saturates, so where it applies matters
  p.softcap = 1.0;
  expect_agrees("softcap_after_bias", p);  // a cap with nothing added after it
  p.softcap = 0;
  add_bias(p);
  p.alibi_slopes = {0.5, 0.25};
  expect_agrees("softcap_after_bias", p);  // bias and ALiBi without a cap
  p.softcap = 1.0;
  expect_out_differs("softcap_after_bias", p);
  p.alibi_slopes.clear();
  expect_out_differs("softcap_after_bias", p);  // the bias alone, capped
}

TEST(ZooV2, AlibiSignFlipped) {
  Problem p = filled({1, 2, 3, 5, 4, 3}, Causal::bottom_right);
  add_bias(p);
  expect_agrees("alibi_sign_flipped", p);
  p.alibi_slopes = {0.5, 0.25};
  expect_out_differs("alibi_sign_flipped", p);
  p.alibi_slopes = {0, 0};  // slope 0: no sign to get wrong
  expect_agrees("alibi_sign_flipped", p);
}

TEST(ZooV2, SinksIgnored) {
  Problem p = filled({1, 2, 3, 4, 4, 3});
  p.lse_requested = true;
  expect_agrees("sinks_ignored", p);
  p.sinks = {1.0, -0.5};
  expect_out_differs("sinks_ignored", p);
  EXPECT_GT(gap_to_reference("sinks_ignored", p).lse, kDiffer);
}

TEST(ZooV2, LseBase2) {
  Problem p = filled({1, 2, 3, 4, 4, 3}, Causal::bottom_right);
  expect_agrees("lse_base2", p);  // no lse asked: out is right
  p.lse_requested = true;
  const Gap g = gap_to_reference("lse_base2", p);
  EXPECT_LT(g.out, kAgree);  // out stays right
  EXPECT_GT(g.lse, kDiffer);
}

}  // namespace
}  // namespace attncheck
