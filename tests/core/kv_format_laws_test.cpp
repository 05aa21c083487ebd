// The format laws of ABI v3 beyond quantized_matches_oracle (docs/abi/plugin-abi-v3.md, "Laws
// version 3 makes possible"): scale_power_of_two and equal_values_across_formats, each on a
// hand-built case (batch 2, heads 2 on one kv head, q_len 3, kv_len 5 with the second
// sequence's keys 3 and 4 dead, head_dim = value_dim = 32): the references pass, the zoo's
// faults fail with the words that name them, and the twins the laws build
// (law_framework/format_twins.h) hold the same real values.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "driver/law_run.h"
#include "gen/choice_source.h"
#include "gen/kv_format_draws.h"
#include "impls/in_process.h"
#include "law_framework/format_twins.h"
#include "law_framework/law.h"
#include "problem/kv_storage.h"
#include "oracle/oracle.h"
#include "problem/problem.h"

namespace attncheck {
namespace {

Problem fmt_case(DType t, KvFormat kf, KvFormat vf, ScaleGranularity g, uint64_t seed) {
  Problem p = make_problem(t, Shape{2, 2, 3, 5, 32, 32, 1});
  gen::RandomChoices r(seed);
  for (double& x : p.q) x = round_to(t, static_cast<double>(r.integer(-64, 64)) / 32.0);
  for (std::size_t i = 0; i < p.k.size(); ++i) p.k[i] = round_to(t, static_cast<double>(i % 7) / 4 - 0.75);
  for (std::size_t i = 0; i < p.v.size(); ++i) p.v[i] = round_to(t, static_cast<double>(i % 5) / 4 - 0.5);
  p.kv_lens = {5, 3};
  p.lse_requested = true;
  if (kf != KvFormat::dtype) gen::store_kv_side(r, p, true, kf, g);
  if (vf != KvFormat::dtype) gen::store_kv_side(r, p, false, vf, g);
  return p;
}

Verdict judge(const char* law, const char* impl, const Problem& p) {
  const Law* l = find_law(law);
  EXPECT_NE(l, nullptr) << law << " is not in the catalogue";
  if (!l) return Verdict::fail("no law");
  std::unique_ptr<Implementation> i = make_builtin(impl);
  EXPECT_NE(i, nullptr) << impl;
  return l->check(*i, p);
}

// Scaling a side by 2^x keeps the problem consistent and multiplies the oracle's out by 2^x
// (V) or leaves it (K, the softmax scale times 2^-x), lse unchanged: the law's premise.
TEST(ScalePowerOfTwo, TheScaledTwinsHoldTheCasesValuesTimes2e) {
  const Problem p = fmt_case(DType::f32, KvFormat::int8, KvFormat::q8_0, ScaleGranularity::per_kv_head, 5);
  ASSERT_EQ(p.inconsistency(), "");
  for (const bool is_k : {true, false}) {
    const std::optional<ExponentSpan> span = power_of_two_span(p, is_k);
    ASSERT_TRUE(span) << is_k;
    EXPECT_LT(span->lo, span->hi);
    const Problem up = with_side_scaled(p, is_k, span->hi);
    ASSERT_EQ(up.inconsistency(), "") << is_k;
    // K's twins name the softmax scale (the float nearest 1/sqrt(32) at 2^0).
    const OracleResult a = oracle(is_k ? with_side_scaled(p, true, 0) : p), b = oracle(up);
    for (std::size_t i = 0; i < a.exact.size(); ++i)
      ASSERT_NEAR(std::ldexp(a.exact[i], is_k ? 0 : span->hi), b.exact[i], 1e-12 * std::ldexp(1.0, span->hi)) << i;
  }
  // A side stored unscaled has no span.
  EXPECT_FALSE(power_of_two_span(fmt_case(DType::f32, KvFormat::f16, KvFormat::dtype, ScaleGranularity::per_tensor, 5), true));
}

TEST(ScalePowerOfTwo, ReferencesPassAndSaturationOrAnIgnoredScaleFails) {
  for (KvFormat f : {KvFormat::fp8_e4m3, KvFormat::int8, KvFormat::int4, KvFormat::q8_0, KvFormat::q4_0}) {
    const Problem p = fmt_case(DType::f16, f, f, ScaleGranularity::per_batch_kv_head, 11);
    ASSERT_EQ(p.inconsistency(), "") << kv_format_name(f);
    for (const char* ref : {"reference", "naive", "online"}) {
      const Verdict v = judge("scale_power_of_two", ref, p);
      EXPECT_TRUE(v.passed()) << ref << " " << kv_format_name(f) << ": " << v.message;
    }
    // Small queries let K reach past 448 too: either side may show it first.
    const Verdict sat = judge("scale_power_of_two", "kv_dequant_saturated", p);
    EXPECT_TRUE(sat.failed()) << kv_format_name(f) << ": " << sat.message;
    EXPECT_NE(sat.message.find("times 2^"), std::string::npos) << sat.message;
  }
  const Problem scaled = fmt_case(DType::bf16, KvFormat::int8, KvFormat::dtype, ScaleGranularity::per_tensor, 3);
  const Verdict ignored = judge("scale_power_of_two", "kv_scale_ignored", scaled);
  EXPECT_TRUE(ignored.failed()) << ignored.message;
  EXPECT_NE(ignored.message.find("K's int8 scales times 2^"), std::string::npos) << ignored.message;
  EXPECT_EQ(judge("scale_power_of_two", "reference", fmt_case(DType::f32, KvFormat::bf16, KvFormat::f16,
                                                               ScaleGranularity::per_tensor, 3))
                .status,
            VerdictStatus::not_applicable);
}

// The partner of each format holds the same real values (the same oracle); an unoffered
// partner is no twin.
TEST(EqualValuesAcrossFormats, TwinsHoldTheSameRealValues) {
  const uint32_t all = (1u << 9) - 2;
  struct Pair { DType t; KvFormat from, to; };
  for (const Pair& c : {Pair{DType::f16, KvFormat::int4, KvFormat::int8}, Pair{DType::bf16, KvFormat::int8, KvFormat::q8_0},
                        Pair{DType::f32, KvFormat::f16, KvFormat::dtype}}) {
    const Problem p = fmt_case(c.t, c.from, c.from, ScaleGranularity::per_batch_kv_head, 7);
    for (const bool is_k : {true, false}) {
      const std::optional<FormatTwin> twin = same_values_other_format(p, is_k, all);
      ASSERT_TRUE(twin) << kv_format_name(c.from);
      EXPECT_EQ(is_k ? twin->problem.k_format : twin->problem.v_format, c.to);
      ASSERT_EQ(twin->problem.inconsistency(), "") << twin->how;
      EXPECT_EQ(oracle(twin->problem).exact, oracle(p).exact) << twin->how;
    }
    if (c.to != KvFormat::dtype) EXPECT_FALSE(same_values_other_format(p, true, all & ~(1u << static_cast<int>(c.to))));
  }
}

TEST(EqualValuesAcrossFormats, ReferencesPassAndInt4ReadAsHalvesIsNamed) {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    const Problem p = fmt_case(t, KvFormat::int8, KvFormat::int4, ScaleGranularity::per_kv_head, 13);
    ASSERT_EQ(p.inconsistency(), "");
    for (const char* ref : {"reference", "naive", "online"}) {
      const Verdict v = judge("equal_values_across_formats", ref, p);
      EXPECT_TRUE(v.passed()) << ref << " " << dtype_name(t) << ": " << v.message;
    }
    const Verdict halves = judge("equal_values_across_formats", "int4_nibbles_as_halves", p);
    EXPECT_TRUE(halves.failed()) << halves.message;
    EXPECT_NE(halves.message.find("V's int4 nibbles read as halves"), std::string::npos) << halves.message;
  }
  EXPECT_EQ(judge("equal_values_across_formats", "reference",
                  fmt_case(DType::f32, KvFormat::fp8_e5m2, KvFormat::q4_0, ScaleGranularity::per_tensor, 3))
                .status,
            VerdictStatus::not_applicable);
}

// Dead rows (keys 3 and 4 of sequence 1) hold the codes of their values when those are codes,
// else poison: a drawn case's are poison (NaN e4m3 0x7F), zeros are zero codes.
TEST(DeadCodesInert, DeadRowsHoldTheirCodesOrPoison) {
  Problem p = fmt_case(DType::f16, KvFormat::dtype, KvFormat::fp8_e4m3, ScaleGranularity::per_tensor, 2);
  const int64_t row = 32, dead = (5 + 3) * row;  // sequence 1, kv head 0, key 3: byte offset of its row
  std::vector<uint8_t> bytes(static_cast<std::size_t>(kv_stored_bytes(p, false)));
  encode_kv_stored(p, false, bytes.data());
  EXPECT_EQ(bytes[static_cast<std::size_t>(dead)], 0x7F);
  for (int64_t c = 0; c < 2 * row; ++c) p.v[static_cast<std::size_t>((5 + 3) * row + c)] = 0;
  encode_kv_stored(p, false, bytes.data());
  EXPECT_EQ(bytes[static_cast<std::size_t>(dead)], 0x00);
  EXPECT_EQ(p.inconsistency(), "");
}

TEST(DeadCodesInert, ReferencesPassAndZeroTimesNanFails) {
  for (KvFormat f : {KvFormat::fp8_e4m3, KvFormat::fp8_e5m2, KvFormat::q8_0, KvFormat::q4_0, KvFormat::int8}) {
    const Problem p = fmt_case(DType::bf16, f, f, ScaleGranularity::per_kv_head, 19);
    for (const char* ref : {"reference", "naive", "online"}) {
      const Verdict v = judge("dead_codes_inert", ref, p);
      EXPECT_TRUE(v.passed()) << ref << " " << kv_format_name(f) << ": " << v.message;
    }
    // int8 has no NaN code: its dead rows decode finite and the block read changes nothing.
    const Verdict nan = judge("dead_codes_inert", "kv_dead_block_nan", p);
    EXPECT_EQ(nan.failed(), f != KvFormat::int8) << kv_format_name(f) << ": " << nan.message;
  }
  Problem all_live = fmt_case(DType::f32, KvFormat::q8_0, KvFormat::q8_0, ScaleGranularity::per_tensor, 19);
  all_live.kv_lens.clear();
  EXPECT_EQ(judge("dead_codes_inert", "reference", all_live).status, VerdictStatus::not_applicable);
}

// reference offering only the formats `offered` (bit 1u << f).
class FormatsOffered final : public Implementation {
 public:
  explicit FormatsOffered(uint32_t offered) : inner_(make_builtin("reference")), offered_(offered) {}
  std::string name() const override { return "reference_offering_some"; }
  std::string source() const override { return inner_->source(); }
  Outcome run(const Problem& p) override { return inner_->run(p); }
  FeatureBits features() const override { return inner_->features(); }
  uint32_t kv_formats() const override { return offered_; }

 private:
  std::unique_ptr<Implementation> inner_;
  uint32_t offered_;
};

// A law whose formats the implementation does not offer is skipped, naming what it needs (it
// was skipped only after drawing every case, saying no case was applicable); with them, judged.
TEST(FormatLaws, SkippedWithoutTheFormatsTheyNeed) {
  auto bit = [](KvFormat f) { return 1u << static_cast<int>(f); };
  RunOptions o;
  o.seed = 3;
  o.cases = 10;
  o.min_judged = 5;
  FormatsOffered fp8_only(bit(KvFormat::fp8_e4m3)), bf16_only(bit(KvFormat::bf16)),
      pair(bit(KvFormat::int4) | bit(KvFormat::int8));
  const LawReport no_pair = run_law(*find_law("equal_values_across_formats"), fp8_only, o);
  EXPECT_EQ(no_pair.status, LawStatus::skipped) << no_pair.message;
  EXPECT_NE(no_pair.message.find("int4 and int8"), std::string::npos) << no_pair.message;
  const LawReport no_scale = run_law(*find_law("scale_power_of_two"), bf16_only, o);
  EXPECT_EQ(no_scale.status, LawStatus::skipped) << no_scale.message;
  EXPECT_NE(no_scale.message.find("does not declare"), std::string::npos) << no_scale.message;
  EXPECT_EQ(run_law(*find_law("equal_values_across_formats"), pair, o).status, LawStatus::pass);
  EXPECT_EQ(run_law(*find_law("scale_power_of_two"), fp8_only, o).status, LawStatus::pass);
}

}  // namespace
}  // namespace attncheck
