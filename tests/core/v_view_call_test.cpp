// ABI v3's V as a view of K (docs/abi/plugin-abi-v3.md, "V as a view of K", "MLA") end to
// end for forward calls: a Problem says v_view_of_k (v still holds V's values, which must be
// k's first value_dim channels), the call sends v as k's memory with k's strides (padded,
// packed or paged: one pool, one table), the references compute a view exactly as the same
// values copied, the generator draws views (DeepSeek's MLA shape among them) only for
// implementations declaring V_VIEW_OF_K, and the zoo's row-stride fault is caught.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "call/call_layout.h"
#include "gen/generators.h"
#include "gen/v_view_draws.h"
#include "impls/in_process.h"
#include "driver/law_run.h"
#include "law_framework/law.h"
#include "problem/paging.h"
#include "problem/problem.h"

namespace attncheck {
namespace {

// Two sequences of 5 keys (kv_lens 5 and 3), four query heads over two kv heads, head_dim 6,
// value_dim 4: v is k's first 4 channels. Values small integers times 1/8 (exact in every dtype).
Problem viewed(DType t) {
  Problem p = make_problem(t, Shape{2, 4, 3, 5, 6, 4, 2});
  for (std::size_t i = 0; i < p.q.size(); ++i) p.q[i] = static_cast<double>((i * 5 + 1) % 9) / 8.0 - 0.5;
  for (std::size_t i = 0; i < p.k.size(); ++i) p.k[i] = static_cast<double>((i * 7 + 3) % 11) / 8.0 - 0.625;
  p.kv_lens = {5, 3};
  p.lse_requested = true;
  gen::make_v_a_view_of_k(p);
  return p;
}

// The same values with V in its own memory.
Problem copied(Problem p) {
  p.v_view_of_k = false;
  return p;
}

TEST(VViewProblem, FeatureHeaderAndConsistency) {
  const Problem p = viewed(DType::f32);
  ASSERT_EQ(p.inconsistency(), "");
  EXPECT_TRUE(p.features() & kVViewFeature);
  EXPECT_FALSE(copied(p).features() & kVViewFeature);
  EXPECT_EQ(feature_list(kVViewFeature), "v_view_of_k");
  EXPECT_NE(p.header().find("v_view_of_k"), std::string::npos);
  EXPECT_FALSE(p == copied(p));
  Problem off = p;  // a value of v that is not k's
  off.v[off.v_at(3, 4, 2)] += 0.125;
  EXPECT_NE(off.inconsistency().find("v_view_of_k but v's key row 19 channel 2"), std::string::npos) << off.inconsistency();
  Problem wide = make_problem(DType::f32, Shape{1, 1, 1, 2, 2, 3});
  wide.v_view_of_k = true;
  EXPECT_NE(wide.inconsistency().find("value_dim > head_dim"), std::string::npos) << wide.inconsistency();
  Problem layout = p;
  layout.layouts.v.gap[2] = 1;
  EXPECT_NE(layout.inconsistency().find("layouts.v"), std::string::npos) << layout.inconsistency();
}

// v.data == k.data with k's strides and no bytes of its own, padded and paged.
TEST(VViewCall, VIsKsMemoryWithKsStrides) {
  Problem paged = paged_plainly(viewed(DType::f32), 2);
  paged.v_view_of_k = true;
  for (const Problem& p : {viewed(DType::f32), paged}) {
    ASSERT_EQ(p.inconsistency(), "") << p.header();
    const CallLayout l = layout_for(p, 3);
    EXPECT_EQ(l.v, l.k);
    EXPECT_EQ(l.v_bytes, 0u);
    std::vector<uint8_t> region(l.total + 64);
    uint8_t* base = region.data() + (64 - reinterpret_cast<uintptr_t>(region.data()) % 64) % 64;
    encode_call(p, l, base);
    const attncheck_call_v3 c = abi_call_v3(p, l, base);
    EXPECT_EQ(c.v2.v.data, c.v2.k.data);
    for (int a = 0; a < 4; ++a) EXPECT_EQ(c.v2.v.stride[a], c.v2.k.stride[a]) << a;
    EXPECT_EQ(c.v2.value_dim, 4);
    EXPECT_EQ(c.v2.head_dim, 6);
  }
}

class VViewReferences : public ::testing::TestWithParam<const char*> {};

// Bit for bit the copied call's out and lse: padded, packed keys, paged keys, every dtype.
TEST_P(VViewReferences, ViewEqualsCopyBitForBit) {
  const std::unique_ptr<Implementation> impl = make_builtin(GetParam());
  ASSERT_TRUE(impl->features() & kVViewFeature);
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    Problem packed = viewed(t);
    packed.cu_seqlens_k = {0, 5, 9}, packed.total_k = 11;
    packed.kv_lens = {5, 3};
    Problem paged = paged_plainly(copied(viewed(t)), 2);
    paged.v_view_of_k = true;
    for (const Problem& p : {viewed(t), packed, paged}) {
      ASSERT_EQ(p.inconsistency(), "") << p.header();
      const Outcome a = impl->run(p), b = impl->run(copied(p));
      ASSERT_EQ(a.status, CallStatus::ok) << p.header() << ": " << a.message;
      ASSERT_EQ(b.status, CallStatus::ok) << b.message;
      EXPECT_EQ(a.out, b.out) << GetParam() << " " << p.header();
      ASSERT_EQ(a.lse.size(), b.lse.size());
      for (std::size_t i = 0; i < a.lse.size(); ++i) EXPECT_EQ(a.lse[i], b.lse[i]) << "lse row " << i;
    }
  }
}

// K in a stored format: V shares it (format, granularity, the scales its view reads), drawn
// by the generator for every format the references offer; the view equals the copy bit for bit.
TEST_P(VViewReferences, StoredFormatsViewEqualsCopyBitForBit) {
  const std::unique_ptr<Implementation> impl = make_builtin(GetParam());
  GenOptions o;
  o.features = (kAllFeatures & ~ATTNCHECK_FEATURE_STRIDES) | kKvFormatsFeature | kVViewFeature;
  o.required = kVViewFeature;
  o.kv_formats = impl->kv_formats();
  o.dtypes = {DType::f32, DType::f16, DType::bf16};
  o.head_dims = {8, 32, 64};
  std::vector<int> formats(9);
  int narrower = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const Problem p = sample_problem(o, seed, 20);
    ASSERT_TRUE(p.v_view_of_k) << seed;
    ASSERT_EQ(p.inconsistency(), "") << "seed " << seed << ": " << p.header();
    ASSERT_EQ(p.k_format, p.v_format) << seed;
    ++formats[static_cast<std::size_t>(p.k_format)];
    narrower += p.kv_formatted() && p.shape.value_dim < p.shape.head_dim;
    const Outcome a = impl->run(p), b = impl->run(copied(p));
    ASSERT_EQ(a.status, CallStatus::ok) << p.header() << ": " << a.message;
    ASSERT_EQ(b.status, CallStatus::ok) << b.message;
    ASSERT_EQ(a.out.size(), b.out.size());
    for (std::size_t i = 0; i < a.out.size(); ++i)
      ASSERT_TRUE(a.out[i] == b.out[i] || (std::isnan(a.out[i]) && std::isnan(b.out[i]))) << p.header() << " element " << i;
  }
  int stored = 0;
  for (std::size_t f = 1; f < formats.size(); ++f) stored += formats[f];
  // A view whose V does not share K's format or scales is refused, naming why.
  bool refused = false;
  for (uint64_t seed = 1; seed <= 60 && !refused; ++seed) {
    Problem p = sample_problem(o, seed, 20);
    if (p.v_scales.empty()) continue;
    refused = true;
    if (info(p.k_format).scaled) {  // the call's v_scale is k_scale itself (data and strides)
      const CallLayout l = layout_for(p, 3);
      std::vector<uint8_t> region(l.total + 64);
      uint8_t* base = region.data() + (64 - reinterpret_cast<uintptr_t>(region.data()) % 64) % 64;
      encode_call(p, l, base);
      const attncheck_call_v3 c = abi_call_v3(p, l, base);
      EXPECT_EQ(c.v2.v.data, c.v2.k.data);
      EXPECT_EQ(c.v_scale.data, c.k_scale.data);
      for (int a = 0; a < 3; ++a) EXPECT_EQ(c.v_scale.stride[a], c.k_scale.stride[a]) << p.header();
    }
    p.v_scales[0] *= 2;
    EXPECT_NE(p.inconsistency().find("v_scales are not what V's view of k_scales reads"), std::string::npos)
        << p.inconsistency();
    p.v_scales[0] /= 2;
    p.v_format = p.k_format == KvFormat::int8 ? KvFormat::fp8_e4m3 : KvFormat::int8;
    EXPECT_NE(p.inconsistency(), "");
  }
  EXPECT_TRUE(refused) << "no view with scales drawn";
  EXPECT_GT(stored, 30);
  EXPECT_GT(narrower, 10);
}

INSTANTIATE_TEST_SUITE_P(Builtins, VViewReferences, ::testing::Values("reference", "naive", "online"));

// The zoo member reads V's rows value_dim apart in a view: wrong on the view, right on the copy.
TEST(VViewZoo, RowStrideByValueDimIsWrongOnTheViewOnly) {
  const std::unique_ptr<Implementation> zoo = make_builtin("v_view_row_stride_by_value_dim");
  const std::unique_ptr<Implementation> ref = make_builtin("reference");
  const Problem p = viewed(DType::f64);
  const Outcome view = zoo->run(p), copy = zoo->run(copied(p)), right = ref->run(p);
  ASSERT_EQ(view.status, CallStatus::ok) << view.message;
  EXPECT_EQ(copy.out, right.out);
  EXPECT_NE(view.out, right.out);
}

// Drawn only with kVViewFeature; every view consistent; value_dim below head_dim most of the
// time, DeepSeek's MLA shape (one kv head, 576 = 512 + 64, scale 1/sqrt(192)) among them,
// and padded, packed and paged keys.
TEST(VViewDraws, ViewsAndMlaShapesAreDrawnForTheFeatureOnly) {
  GenOptions o;
  o.features = kAllFeatures | kPackedFeature | kPagedFeature | kVViewFeature;
  o.required = kVViewFeature;
  int narrower = 0, mla = 0, paged = 0, packed = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const Problem p = sample_problem(o, seed, 30);
    ASSERT_TRUE(p.v_view_of_k) << "seed " << seed;
    ASSERT_EQ(p.inconsistency(), "") << "seed " << seed;
    narrower += p.shape.value_dim < p.shape.head_dim;
    paged += p.paged();
    packed += p.packed_k();
    if (p.shape.head_dim == 576) {
      ++mla;
      EXPECT_EQ(p.shape.value_dim, 512);
      EXPECT_EQ(p.shape.kv_head_count(), 1);
      EXPECT_EQ(p.scale, 1.0 / std::sqrt(192.0));
      EXPECT_LE(p.shape.batch * p.shape.heads * p.shape.q_len * p.shape.kv_len, 2048);
    }
  }
  EXPECT_GT(narrower, 100);
  EXPECT_GT(mla, 10);  // 20 of 200 when written
  EXPECT_GT(paged, 20);
  EXPECT_GT(packed, 20);
  o.features = kAllFeatures | kPackedFeature | kPagedFeature;
  o.required = 0;
  for (uint64_t seed = 1; seed <= 50; ++seed) EXPECT_FALSE(sample_problem(o, seed, 30).v_view_of_k) << seed;
}

// Shrinking offers V copied, and every candidate of a view is consistent.
TEST(VViewDraws, ShrinkingOffersTheCopyAndStaysConsistent) {
  GenOptions o;
  o.features = kAllFeatures | kVViewFeature;
  o.required = kVViewFeature;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const Problem p = sample_problem(o, seed, 30);
    bool copy_offered = false;
    for (const Problem& c : shrink_problem(p, o)) {
      ASSERT_EQ(c.inconsistency(), "") << "seed " << seed << ": " << c.header();
      copy_offered = copy_offered || c == copied(p);
    }
    EXPECT_TRUE(copy_offered) << "seed " << seed;
  }
}

// The two laws: both pass the reference and fail the zoo member on the hand-built view.
TEST(VViewLaws, BothLawsJudgeTheView) {
  const std::unique_ptr<Implementation> ref = make_builtin("reference");
  const std::unique_ptr<Implementation> zoo = make_builtin("v_view_row_stride_by_value_dim");
  const Problem p = viewed(DType::f32);
  for (const char* name : {"mla_matches_oracle", "v_view_equals_copy"}) {
    const Law* law = find_law(name);
    ASSERT_NE(law, nullptr) << name;
    EXPECT_EQ(law->check(*ref, p).status, VerdictStatus::pass) << name;
    const Verdict v = law->check(*zoo, p);
    EXPECT_EQ(v.status, VerdictStatus::fail) << name;
    EXPECT_EQ(law->check(*ref, copied(p)).status, VerdictStatus::not_applicable) << name;
  }
}

// An MLA-only kernel: a built-in that answers ATTNCHECK_UNSUPPORTED (a finer limit) to every
// call whose v is not a view of k.
class MlaOnly final : public Implementation {
 public:
  explicit MlaOnly(const char* inner) : inner_(make_builtin(inner)) {}
  std::string name() const override { return "mla_only"; }
  std::string source() const override { return "builtin:mla_only"; }
  FeatureBits features() const override { return inner_->features(); }
  Outcome run(const Problem& p) override {
    if (!p.v_view_of_k) return {CallStatus::unsupported, {}, "only v as a view of k"};
    return inner_->run(p);
  }

 private:
  std::unique_ptr<Implementation> inner_;
};

// Judged on every case by mla_matches_oracle, never passed with nothing judged: the copy
// law and matches_oracle, whose calls it refuses, are not passes; its fault is caught.
TEST(VViewLaws, AnMlaOnlyKernelIsJudged) {
  RunOptions o;
  o.seed = 20261130;
  o.cases = 30;
  o.min_judged = 20;
  MlaOnly right("reference"), wrong("v_view_row_stride_by_value_dim");
  const LawReport mla = run_law(*find_law("mla_matches_oracle"), right, o);
  EXPECT_EQ(mla.status, LawStatus::pass) << mla.message;
  EXPECT_GE(mla.judged, 20);
  for (const char* name : {"v_view_equals_copy", "matches_oracle"}) {
    const LawReport r = run_law(*find_law(name), right, o);
    EXPECT_NE(r.status, LawStatus::pass) << name << ": " << r.message;
    EXPECT_EQ(r.judged, 0) << name;
  }
  EXPECT_EQ(run_law(*find_law("mla_matches_oracle"), wrong, o).status, LawStatus::fail);
}

}  // namespace
}  // namespace attncheck
