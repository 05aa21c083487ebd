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
#include "impls/zoo/knobbed_attention_v2.h"
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

// The v2 zoo as the rows say: zoo members with a v2 forward of their own (the
// backward zoo runs reference's). A member with a v3 forward (packed_kv_lens_ignored)
// is ABI v3's: its v2 entry is reference's, its fault is in its v3 forward, and it
// declares PACKED, which it computes; it is not of the v2 zoo.
std::vector<std::string> v2_members() {
  std::vector<std::string> names;
  for (const BuiltinInfo& b : builtins())
    if (b.kind == BuiltinKind::zoo && b.forward_v2 && !b.backward_v2 && !b.forward_v3) names.emplace_back(b.name);
  return names;
}

TEST(ZooV2, EveryMemberDeclaresEveryFeatureAndKeepsAV1Entry) {
  ASSERT_GE(v2_members().size(), 9u);
  for (const std::string& name : v2_members()) {
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
  p.dtype = DType::f16;  // the 16-bit path (widened through the strides) has the fault too
  expect_out_differs("strides_ignored", p);
  p.dtype = DType::f32;
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

// A problem that uses every feature at once, except those in `left_out`: GQA
// (4 query heads on 2 kv heads), strided q (BSHD with head gaps), k (row gaps)
// and out, lengths with padding rows and padding keys holding NaN, a causal
// rule, a window, softcap, a bias with a -inf, a mask broadcast over batch and
// rows, ALiBi, sinks and lse. q_len 4 < kv_len 6, so the bottom-right
// diagonal is not i; batch 0 has Lq 3 > Lk 2 (an empty row under bottom-right).
Problem every_feature(DType dtype, FeatureBits left_out = 0, Causal causal = Causal::bottom_right) {
  const auto use = [left_out](FeatureBits f) { return (left_out & f) == 0; };
  Problem p = filled({2, 4, 4, 6, 4, 3, use(ATTNCHECK_FEATURE_GQA) ? 2 : 4}, causal);
  p.dtype = dtype;
  if (use(ATTNCHECK_FEATURE_LENGTHS)) {
    p.q_lens = {3, 4};
    p.kv_lens = {2, 6};
    for (int64_t kvh = 0; kvh < p.shape.kv_head_count(); ++kvh)  // batch 0's padding keys 2..5
      for (int64_t j = 2; j < 6; ++j) {
        for (int64_t d = 0; d < 4; ++d) p.k[p.k_at(kvh, j, d)] = NAN;
        for (int64_t c = 0; c < 3; ++c) p.v[p.v_at(kvh, j, c)] = NAN;
      }
  }
  if (use(ATTNCHECK_FEATURE_STRIDES)) {
    p.layouts.q = {{0, 2, 1}, {0, 1, 0}};
    p.layouts.k.gap = {0, 0, 2};
    p.layouts.out = {{0, 2, 1}, {1, 0, 3}};
  }
  if (use(ATTNCHECK_FEATURE_WINDOW)) p.window_left = 2, p.window_right = 0;
  p.scale = 1.0;
  if (use(ATTNCHECK_FEATURE_SOFTCAP)) p.softcap = 1.5;
  if (use(ATTNCHECK_FEATURE_BIAS)) {
    add_bias(p);
    p.bias[p.bias_at(5, 2, 3)] = -INFINITY;
  }
  if (use(ATTNCHECK_FEATURE_MASK)) {
    p.mask_broadcast = {false, true, false};  // one [kv_len] row per head
    p.mask.assign(static_cast<std::size_t>(p.mask_broadcast.size(p.shape)), 1);
    p.mask[p.mask_broadcast.at(p.shape, 0, 2, 0, 4)] = 0;
  }
  if (use(ATTNCHECK_FEATURE_ALIBI)) p.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
  if (use(ATTNCHECK_FEATURE_SINKS)) p.sinks = {1.0, -0.5, 0.25, 2.0};
  p.lse_requested = use(ATTNCHECK_FEATURE_LSE);
  return p;
}

int knobs_off_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len) {
  return detail::knobbed_forward_v2(call, err, err_len, {});
}

// With every knob off the loop is correct attention, with every feature, in
// every dtype (16-bit outputs are rounded once from float by both; they may
// land a unit in the last place of the dtype apart).
TEST(ZooV2, KnobsOffIsCorrectAttentionWithEveryFeature) {
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    for (Causal causal : {Causal::bottom_right, Causal::top_left, Causal::none}) {
      const Problem p = every_feature(dtype, 0, causal);
      ASSERT_EQ(p.inconsistency(), "");
      ASSERT_EQ(p.features() | ATTNCHECK_FEATURE_CAUSAL, kAllFeatures);
      const Outcome want = make_builtin("reference")->run(p);
      const Outcome got = InProcessImplementation("knobs_off", knobs_off_forward_v2, kAllFeatures).run(p);
      ASSERT_EQ(got.status, CallStatus::ok) << got.message;
      const double slack = dtype == DType::f16 ? 2e-3 : dtype == DType::bf16 ? 1.6e-2 : kAgree;
      EXPECT_LT(largest_gap(got.out, want.out), slack) << p.header();
      EXPECT_LT(largest_gap(got.lse, want.lse), kAgree) << p.header();
    }
  }
}

// Each member on the every-feature problem differs from reference; with its
// own feature left out (every other one still used) it agrees: the fault is
// exactly there.
TEST(ZooV2, EachMemberIsRightInEveryOtherFeature) {
  struct Case {
    const char* member;
    FeatureBits fault_in;
    bool lse_only = false;  // out is right even with the feature
    // Bottom-right hides every padding key by itself (j <= i + Lk - Lq < Lk):
    // padding keys are seen only under top-left (or no causal rule).
    Causal causal = Causal::bottom_right;
  };
  const Case cases[] = {
      {"gqa_kv_modulo", ATTNCHECK_FEATURE_GQA},
      {"strides_ignored", ATTNCHECK_FEATURE_STRIDES},
      {"padding_keys_attended", ATTNCHECK_FEATURE_LENGTHS, false, Causal::top_left},
      {"window_off_by_one", ATTNCHECK_FEATURE_WINDOW},
      {"window_top_left", ATTNCHECK_FEATURE_WINDOW | ATTNCHECK_FEATURE_ALIBI},
      {"softcap_after_bias", ATTNCHECK_FEATURE_SOFTCAP},
      {"alibi_sign_flipped", ATTNCHECK_FEATURE_ALIBI},
      {"sinks_ignored", ATTNCHECK_FEATURE_SINKS},
      {"lse_base2", ATTNCHECK_FEATURE_LSE, true},
  };
  for (const Case& c : cases) {
    const Gap with = gap_to_reference(c.member, every_feature(DType::f32, 0, c.causal));
    EXPECT_GT(c.lse_only ? with.lse : with.out, kDiffer) << c.member;
    if (c.lse_only) {
      EXPECT_LT(with.out, kAgree) << c.member;
    }
    const Problem without = every_feature(DType::f32, c.fault_in, c.causal);
    EXPECT_EQ(without.features(), kAllFeatures & ~c.fault_in) << c.member;
    expect_agrees(c.member, without);
  }
}

}  // namespace
}  // namespace attncheck
