// ABI v3's stored K and V formats (docs/abi/plugin-abi-v3.md, "Stored formats of K and V")
// end to end for forward calls: a Problem holds the real values and the scales
// (problem/kv_storage.h) and is inconsistent when a live value is not exactly code times
// scale; the call lays K and V out as codes, dense [batch][kv_heads][kv_len][units], dead
// keys poisoned, the scales an input; the references (reference, naive, online, in process
// through attncheck_call_v3) decode them and stay within the oracle's bound over the real
// values, which allows one rounding of each real element (docs/tolerance.md).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "call/call_layout.h"
#include "gen/choice_source.h"
#include "gen/generators.h"
#include "gen/kv_format_draws.h"
#include "impls/in_process.h"
#include "law_framework/kv_layout_faults.h"
#include "oracle/oracle.h"
#include "problem/kv_decode.h"
#include "problem/kv_storage.h"
#include "problem/problem.h"

namespace attncheck {
namespace {

// batch 2, heads 2 on one kv head, q_len 3, kv_len 5, head_dim 64, value_dim 32; the
// second sequence has 3 keys (keys 3 and 4 exist nowhere in the call). q small values.
Problem base_problem(DType t, uint64_t seed) {
  Problem p = make_problem(t, Shape{2, 2, 3, 5, 64, 32, 1});
  gen::RandomChoices r(seed);
  for (double& x : p.q) x = round_to(t, static_cast<double>(r.integer(-64, 64)) / 32.0);
  p.kv_lens = {5, 3};
  p.lse_requested = true;
  return p;
}

Problem stored(DType t, KvFormat kf, KvFormat vf, ScaleGranularity g, uint64_t seed) {
  Problem p = base_problem(t, seed);
  gen::RandomChoices r(seed * 7 + 1);
  if (kf != KvFormat::dtype) gen::store_kv_side(r, p, true, kf, g);
  if (vf != KvFormat::dtype) gen::store_kv_side(r, p, false, vf, g);
  return p;
}

std::vector<KvFormat> formats_for(DType t) {
  std::vector<KvFormat> out;
  for (const KvFormatInfo& row : all_kv_formats())
    if (row.format != KvFormat::dtype && kv_format_allows(row.format, t)) out.push_back(row.format);
  return out;
}

TEST(KvFormatProblem, DrawnCodesAreConsistentInEveryFormatAndGranularity) {
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    for (KvFormat f : formats_for(t))
      for (ScaleGranularity g : kScaleGranularities) {
        const Problem p = stored(t, f, f, g, 3);
        EXPECT_EQ(p.inconsistency(), "") << dtype_name(t) << " " << kv_format_name(f);
        EXPECT_TRUE(p.features() & kKvFormatsFeature);
        EXPECT_EQ(feature_list(kKvFormatsFeature), "kv_formats");
      }
  EXPECT_FALSE(base_problem(DType::f32, 1).features() & kKvFormatsFeature);
}

TEST(KvFormatProblem, InconsistentStorageIsNamed) {
  auto refused = [](void (*edit)(Problem&), const char* words) {
    Problem p = stored(DType::f16, KvFormat::fp8_e4m3, KvFormat::q4_0, ScaleGranularity::per_kv_head, 5);
    ASSERT_EQ(p.inconsistency(), "");
    edit(p);
    const std::string why = p.inconsistency();
    EXPECT_NE(why.find(words), std::string::npos) << why;
  };
  // A live key no code times its scale holds; one past Lk may hold anything.
  refused([](Problem& p) { p.k[p.k_at(1, 2, 7)] = 0.3; }, "k key 2 of sequence 1, kv head 0: channel 7 holds 0.3");
  refused([](Problem& p) { p.v[p.v_at(0, 1, 3)] = 1e-3; }, "v key 1 of sequence 0");
  refused([](Problem& p) { p.k_scales[0] = -1; }, "k_scales[0] = -1 is not a finite float32 > 0");
  refused([](Problem& p) { p.k_scales.push_back(1); }, "k_scales holds 2 values but fp8_e4m3 needs 1");
  refused([](Problem& p) { p.v_scales[0] = 1.0 / 3; }, "is not a finite binary16");
  refused([](Problem& p) { p.dtype = DType::f64; }, "does not come with dtype f64");
  refused([](Problem& p) { p.kv_lens.clear(); p.cu_seqlens_k = {0, 5, 8}; p.total_k = 8; }, "padded keys only");
  Problem dead = stored(DType::f16, KvFormat::int8, KvFormat::dtype, ScaleGranularity::per_tensor, 5);
  dead.k[dead.k_at(1, 4, 0)] = std::nan("");
  EXPECT_EQ(dead.inconsistency(), "");
}

TEST(KvFormatCall, StoredBytesDecodeToTheRealValuesAndDeadKeysArePoison) {
  for (KvFormat f : formats_for(DType::f32))
    for (ScaleGranularity g : kScaleGranularities) {
      const Problem p = stored(DType::f32, f, f, g, 11);
      const CallLayout l = layout_for(p, 3);
      std::vector<uint8_t> region(l.total + 64);
      uint8_t* base = region.data() + (64 - reinterpret_cast<uintptr_t>(region.data()) % 64) % 64;
      encode_call(p, l, base);
      const attncheck_call_v3 c = abi_call_v3(p, l, base);
      ASSERT_EQ(static_cast<int>(c.k_format), static_cast<int>(f));
      ASSERT_EQ(c.k_scale.data != nullptr, info(f).scaled) << kv_format_name(f);
      for (const bool is_k : {true, false}) {
        KvView view;
        view.data = static_cast<const uint8_t*>(is_k ? c.v2.k.data : c.v2.v.data);
        view.format = f;
        view.dtype = p.dtype;
        for (int a = 0; a < 4; ++a) view.stride[a] = is_k ? c.v2.k.stride[a] : c.v2.v.stride[a];
        const attncheck_scale& sc = is_k ? c.k_scale : c.v_scale;
        view.scale.data = sc.data;
        for (int a = 0; a < 3; ++a) view.scale.stride[a] = sc.stride[a];
        const int64_t cols = is_k ? p.shape.head_dim : p.shape.value_dim;
        std::vector<double> row(static_cast<std::size_t>(cols));
        for (int64_t b = 0; b < 2; ++b)
          for (int64_t j = 0; j < 5; ++j) {
            const DecodedRow d = decode_view_row(view, b, b, 0, j, cols, row.data());
            if (j >= p.kv_len_of(b)) {
              // NaN codes (or NaN d) where the format has one; INT8 and INT4 their extreme code.
              if (f != KvFormat::int8 && f != KvFormat::int4) EXPECT_FALSE(d.finite()) << kv_format_name(f);
              continue;
            }
            for (int64_t e = 0; e < cols; ++e)
              ASSERT_EQ(row[e], is_k ? p.k[p.k_at(b, j, e)] : p.v[p.v_at(b, j, e)])
                  << kv_format_name(f) << " " << scale_granularity_name(g) << (is_k ? " k" : " v") << " b" << b
                  << " j" << j << " c" << e;
          }
      }
    }
}

class KvFormatReferences : public ::testing::TestWithParam<const char*> {};

// Every format for K and for V (mixed), every granularity, in f32, f16 and bf16: the
// reference's output within the oracle's bound over the real values, and its lse.
TEST_P(KvFormatReferences, WithinTheBoundOverTheRealValues) {
  const std::unique_ptr<Implementation> impl = make_builtin(GetParam());
  ASSERT_TRUE(impl->features() & kKvFormatsFeature);
  int64_t judged = 0;
  uint64_t seed = 1;
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    const std::vector<KvFormat> fs = formats_for(t);
    for (std::size_t i = 0; i < fs.size(); ++i)
      for (ScaleGranularity g : kScaleGranularities) {
        const KvFormat vf = fs[(i + 3) % fs.size()];
        const Problem p = stored(t, fs[i], i % 3 == 0 ? KvFormat::dtype : vf, g, ++seed);
        const Outcome o = impl->run(p);
        ASSERT_EQ(o.status, CallStatus::ok) << o.message;
        const OracleResult orc = oracle(p);
        const Comparison cmp = compare_to_oracle(p, orc, o.out);
        EXPECT_TRUE(cmp.ok) << GetParam() << " " << dtype_name(t) << " k " << kv_format_name(p.k_format) << " v "
                            << kv_format_name(p.v_format) << " " << scale_granularity_name(g) << ": "
                            << cmp.violations << " over, worst " << cmp.worst_ratio;
        EXPECT_TRUE(compare_lse_to_oracle(p, orc, o.lse).ok);
        judged += cmp.judged;
      }
  }
  EXPECT_GT(judged, 1000);
}

INSTANTIATE_TEST_SUITE_P(References, KvFormatReferences, ::testing::Values("reference", "naive", "online"));

// The bound allows one rounding of each real key element to the dtype: an f16 call whose
// fp8 keys x scale are not f16 numbers, [448 (1 + 2^-12), -448 (1 - 2^-13)] (per-channel
// scales), rounds both to +-448. The exact logit q.k = 448 (2^-12 + 2^-13) = 0.164 becomes 0
// against a zero key (values 1 and 0): the output moves by 0.04, far past version 2's bound
// for the same logits (u16 (|s| + |s - m| + 1), about 6e-4), within u16 a_j = 2^-11 * 896.
TEST(KvFormatBound, OneRoundingOfEachRealKeyIsAllowed) {
  Problem p = make_problem(DType::f16, Shape{1, 1, 1, 2, 2, 1, 1}, Causal::none, 1.0);
  p.q = {1, 1};
  p.v = {1, 0};
  p.k_format = KvFormat::fp8_e4m3;
  p.k_scale_granularity = ScaleGranularity::per_kv_head_channel;
  p.k_scales = {1 + std::ldexp(1.0, -12), 1 - std::ldexp(1.0, -13)};
  p.k = {448 * p.k_scales[0], -448 * p.k_scales[1], 0, 0};
  ASSERT_EQ(p.inconsistency(), "");
  const OracleResult orc = oracle(p);
  for (const char* name : {"reference", "naive", "online"}) {
    const Outcome o = make_builtin(name)->run(p);
    ASSERT_EQ(o.status, CallStatus::ok) << o.message;
    EXPECT_NEAR(o.out[0], 0.5, 1e-3) << name;  // the rounded keys' logits: 0 and 0
    const Comparison cmp = compare_to_oracle(p, orc, o.out);
    EXPECT_TRUE(cmp.ok) << name << ": worst " << cmp.worst_ratio << " of the bound " << orc.bound[0];
    EXPECT_EQ(cmp.judged, 1);
  }
}

// The generator (gen/kv_format_draws.h) with KV_FORMATS: every offered format for K and for V,
// mixed, every granularity, subnormal fp8 codes and blocks with d 0 or negative, every case
// consistent; only offered formats; nothing stored without the feature.
TEST(KvFormatDraws, StoredCasesComeInEveryForm) {
  GenOptions o;
  o.dtypes = {DType::f32, DType::f16, DType::bf16};  // F64 comes only with DTYPE storage
  o.features = (kAllFeatures & ~ATTNCHECK_FEATURE_STRIDES) | kKvFormatsFeature;  // as quantized_matches_oracle
  o.required = kKvFormatsFeature;
  o.kv_formats = (1u << 9) - 2;
  o.head_dims = {2, 8, 32, 64};
  o.same_dims = true;
  std::vector<int> k_seen(9), v_seen(9), granularity(4);
  int mixed = 0, stored = 0, negative_d = 0, zero_d = 0, subnormal_fp8 = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    const Problem p = sample_problem(o, seed, 30);
    ASSERT_EQ(p.inconsistency(), "") << "seed " << seed << ": " << p.header();
    ASSERT_TRUE(p.kv_formatted()) << "seed " << seed << ": " << p.header();
    ++stored;
    ++k_seen[static_cast<std::size_t>(p.k_format)];
    ++v_seen[static_cast<std::size_t>(p.v_format)];
    mixed += p.k_format != p.v_format;
    if (info(p.k_format).scaled) ++granularity[static_cast<std::size_t>(p.k_scale_granularity)];
    if (info(p.v_format).block_scaled)
      for (double d : p.v_scales) negative_d += d < 0, zero_d += d == 0;
    if (p.k_format == KvFormat::fp8_e4m3)
      for (std::size_t i = 0; i < p.k.size(); ++i)
        subnormal_fp8 += p.k[i] != 0 && std::abs(p.k[i]) < std::ldexp(p.k_scales[0], -6) &&
                         p.k_scale_granularity == ScaleGranularity::per_tensor;
  }
  EXPECT_EQ(stored, 400);
  for (int f = 1; f < 9; ++f) {  // F16 and BF16 storage with dtype F32 only: a third as often
    EXPECT_GT(k_seen[static_cast<std::size_t>(f)], 8) << kv_format_name(static_cast<KvFormat>(f));
    EXPECT_GT(v_seen[static_cast<std::size_t>(f)], 8) << kv_format_name(static_cast<KvFormat>(f));
  }
  EXPECT_GT(k_seen[0], 10);  // K in the dtype beside a stored V
  EXPECT_GT(mixed, 150);
  for (int g : granularity) EXPECT_GT(g, 10);
  EXPECT_GT(negative_d, 50);
  EXPECT_GT(zero_d, 0);
  EXPECT_GT(subnormal_fp8, 0);
  // Only offered formats; none without the feature.
  o.kv_formats = 1u << static_cast<int>(KvFormat::q8_0);
  GenOptions without = o;
  without.features = kAllFeatures;
  without.required = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    const Problem p = sample_problem(o, seed, 30);
    for (KvFormat f : {p.k_format, p.v_format}) EXPECT_TRUE(f == KvFormat::dtype || f == KvFormat::q8_0);
    EXPECT_FALSE(sample_problem(without, seed, 30).kv_formatted());
  }
}

// Shrinking offers the case unquantized (both sides, then each alone), each consistent.
TEST(KvFormatDraws, ShrinkingGoesTowardTheDtype) {
  const Problem p = stored(DType::f16, KvFormat::fp8_e5m2, KvFormat::q4_0, ScaleGranularity::per_batch_kv_head, 4);
  int plain = 0, k_only = 0, v_only = 0;
  GenOptions o;
  o.features = kAllFeatures | kKvFormatsFeature;
  for (const Problem& c : shrink_problem(p, o)) {
    ASSERT_EQ(c.inconsistency(), "") << c.header();
    plain += !c.kv_formatted();
    k_only += c.k_format == KvFormat::dtype && c.v_format == KvFormat::q4_0;
    v_only += c.k_format == KvFormat::fp8_e5m2 && c.v_format == KvFormat::dtype;
  }
  EXPECT_GE(plain, 1);
  EXPECT_GE(k_only, 1);
  EXPECT_GE(v_only, 1);
}

// The layout faults quantized_matches_oracle names (law_framework/kv_layout_faults.h): the
// zoo's kv_scale_ignored and q4_0_nibbles_interleaved explained by their own fault, a
// reference's output by none.
TEST(KvLayoutFaults, TheZoosFaultsAreNamedAndACorrectOutputIsNot) {
  struct Case { const char* impl; KvFormat k, v; const char* words; };
  const Case cases[] = {{"kv_scale_ignored", KvFormat::dtype, KvFormat::int8, "V's int8 scales ignored"},
                        {"kv_scale_ignored", KvFormat::fp8_e4m3, KvFormat::dtype, "K's fp8_e4m3 scales ignored"},
                        {"q4_0_nibbles_interleaved", KvFormat::q4_0, KvFormat::dtype, "K's q4_0 nibbles read as pairs"},
                        {"q4_0_nibbles_interleaved", KvFormat::dtype, KvFormat::q4_0, "V's q4_0 nibbles read as pairs"}};
  for (const Case& c : cases) {
    // value_dim 32 for the blocks: K and V both 64 and 32 wide here would need two shapes.
    Problem p = make_problem(DType::f32, Shape{2, 2, 3, 5, 32, 32, 1});
    gen::RandomChoices r(17);
    for (double& x : p.q) x = static_cast<double>(r.integer(-64, 64)) / 32.0;
    if (c.k != KvFormat::dtype) gen::store_kv_side(r, p, true, c.k, ScaleGranularity::per_kv_head);
    if (c.v != KvFormat::dtype) gen::store_kv_side(r, p, false, c.v, ScaleGranularity::per_tensor);
    // The side in the dtype: values, not make_problem's zeros.
    for (std::size_t i = 0; c.k == KvFormat::dtype && i < p.k.size(); ++i) p.k[i] = static_cast<double>(i % 7) / 4 - 0.75;
    for (std::size_t i = 0; c.v == KvFormat::dtype && i < p.v.size(); ++i) p.v[i] = static_cast<double>(i % 5) / 4 - 0.5;
    ASSERT_EQ(p.inconsistency(), "");
    const Outcome faulty = make_builtin(c.impl)->run(p), right = make_builtin("reference")->run(p);
    ASSERT_EQ(faulty.status, CallStatus::ok) << faulty.message;
    EXPECT_NE(explain_kv_layout_fault(p, faulty.out).find(c.words), std::string::npos)
        << c.impl << ": " << explain_kv_layout_fault(p, faulty.out);
    EXPECT_EQ(explain_kv_layout_fault(p, right.out), "") << c.impl;
  }
}

// A format the implementation does not offer is not sent.
TEST(KvFormatCall, AFormatNotOfferedIsNotSent) {
  const Problem p = stored(DType::f32, KvFormat::q4_0, KvFormat::dtype, ScaleGranularity::per_tensor, 2);
  const std::unique_ptr<Implementation> packed_only = make_builtin("packed_kv_lens_ignored");
  ASSERT_NE(packed_only, nullptr);
  const Outcome o = packed_only->run(p);
  EXPECT_EQ(o.status, CallStatus::unsupported);
  EXPECT_NE(o.message.find("kv_formats"), std::string::npos) << o.message;
}

}  // namespace
}  // namespace attncheck
