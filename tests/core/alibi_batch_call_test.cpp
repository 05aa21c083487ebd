// ABI v3's ALiBi slopes per (batch, head) (docs/abi/plugin-abi-v3.md, "ALiBi
// per (batch, head)") end to end for forward calls: a Problem carries
// alibi_batch_stride with alibi_slopes [batch][heads], the call lays row b at
// b * stride floats with NaN between the rows, the references (in process
// through attncheck_call_v3) use the slope of (b, h), the oracle too, the
// generator draws such problems only for ALIBI_BATCH and shrinks them to
// version 2's [heads], and the law alibi_batch_matches_alone passes the
// references and catches alibi_batch_first_row.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "call/call_layout.h"
#include "gen/generators.h"
#include "impls/in_process.h"
#include "law_framework/law.h"
#include "oracle/oracle.h"
#include "problem/problem.h"
#include "problem/transforms.h"

namespace attncheck {
namespace {

// Two batch entries of two heads, three queries on five keys (the distances
// |d_i - j| up to 4), values small multiples of 1/8; entry 1's slopes are
// not entry 0's, and the call's rows are 3 floats apart (one poisoned gap).
Problem per_batch_problem(DType t) {
  Problem p = make_problem(t, Shape{2, 2, 3, 5, 4, 2});
  int n = 0;
  for (auto* x : {&p.q, &p.k, &p.v})
    for (double& e : *x) e = static_cast<double>((n++ * 7) % 11) / 8.0 - 0.5;
  p.alibi_slopes = {0.5, 0.25, 2.0, 0.0};  // [batch][heads]
  p.alibi_batch_stride = 3;
  p.lse_requested = true;
  return p;
}

TEST(AlibiBatchProblem, SlopesAreReadPerBatchEntry) {
  const Problem p = per_batch_problem(DType::f32);
  ASSERT_EQ(p.inconsistency(), "");
  EXPECT_EQ(p.slope_of(0 * 2 + 1), 0.25);
  EXPECT_EQ(p.slope_of(1 * 2 + 0), 2.0);
  EXPECT_TRUE(p.features() & kAlibiBatchFeature);
  EXPECT_EQ(feature_list(kAlibiBatchFeature), "alibi_batch");
  Problem v2 = p;
  v2.alibi_slopes.resize(2);
  v2.alibi_batch_stride = 0;
  EXPECT_EQ(v2.inconsistency(), "");
  EXPECT_EQ(v2.slope_of(1 * 2 + 0), 0.5);  // version 2's [heads]: head 0's for every entry
  EXPECT_FALSE(v2.features() & kAlibiBatchFeature);
}

TEST(AlibiBatchProblem, InconsistentStrideIsNamed) {
  auto refused = [](void (*edit)(Problem&), const char* words) {
    Problem p = per_batch_problem(DType::f32);
    edit(p);
    const std::string why = p.inconsistency();
    EXPECT_NE(why.find(words), std::string::npos) << why;
  };
  refused([](Problem& p) { p.alibi_batch_stride = 1; }, "alibi_batch_stride 1 is neither 0 nor at least heads");
  refused([](Problem& p) { p.alibi_slopes.resize(2); }, "alibi_slopes");
  refused([](Problem& p) { p.alibi_slopes.clear(); }, "alibi_batch_stride without alibi_slopes");
}

struct Region {
  CallLayout layout;
  std::unique_ptr<uint8_t, decltype(&std::free)> bytes{nullptr, &std::free};
  attncheck_call_v3 call{};
  explicit Region(const Problem& p) {
    layout = layout_for(p, 3);
    bytes.reset(static_cast<uint8_t*>(std::aligned_alloc(CallLayout::kAlign, layout.total)));
    encode_call(p, layout, bytes.get());
    call = abi_call_v3(p, layout, bytes.get());
  }
};

TEST(AlibiBatchCall, RowsLieAtTheStrideWithNaNBetween) {
  const Problem p = per_batch_problem(DType::f32);
  Region r(p);
  EXPECT_EQ(r.call.alibi_batch_stride, 3);
  EXPECT_EQ(r.layout.alibi_bytes, std::size_t{(3 + 2) * 4});  // row 1 ends at 3 + heads
  const float* m = r.call.v2.alibi_slopes;
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m[0], 0.5f);
  EXPECT_EQ(m[1], 0.25f);
  EXPECT_TRUE(std::isnan(m[2]));  // the gap: must not influence anything
  EXPECT_EQ(m[3], 2.0f);
  EXPECT_EQ(m[4], 0.0f);
  Problem v2 = per_batch_problem(DType::f32);
  v2.alibi_slopes.resize(2);
  v2.alibi_batch_stride = 0;
  Region neutral(v2);
  EXPECT_EQ(neutral.call.alibi_batch_stride, 0);
  EXPECT_EQ(neutral.layout.alibi_bytes, std::size_t{2 * 4});
}

// Batch entry b of p alone, its slopes as version 2's [heads].
Problem entry_with_its_slopes(const Problem& p, int64_t b) {
  Problem r = restricted(p, Ranges{1, p.shape.heads, 0, p.shape.q_len, 0, p.shape.kv_len, p.shape.head_dim,
                                   p.shape.value_dim});
  const int64_t n = p.shape.q_size() / p.shape.batch, k = p.shape.k_size() / p.shape.batch,
                v = p.shape.v_size() / p.shape.batch;
  r.q.assign(p.q.begin() + b * n, p.q.begin() + (b + 1) * n);
  r.k.assign(p.k.begin() + b * k, p.k.begin() + (b + 1) * k);
  r.v.assign(p.v.begin() + b * v, p.v.begin() + (b + 1) * v);
  r.alibi_slopes.assign(p.alibi_slopes.begin() + b * p.shape.heads, p.alibi_slopes.begin() + (b + 1) * p.shape.heads);
  r.alibi_batch_stride = 0;
  return r;
}

class AlibiBatchReferences : public ::testing::TestWithParam<const char*> {};

// Each entry of the per-batch call is, bit for bit, that entry alone with its
// row of slopes (the references promise batch invariance), and the oracle
// (which reads slope_of) accepts it.
TEST_P(AlibiBatchReferences, EachEntryIsItsRowAlone) {
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (Causal causal : {Causal::none, Causal::bottom_right}) {
      Problem p = per_batch_problem(t);
      p.causal = causal;
      const std::unique_ptr<Implementation> impl = make_builtin(GetParam());
      ASSERT_TRUE(impl->features() & kAlibiBatchFeature);
      const Outcome whole = impl->run(p);
      ASSERT_EQ(whole.status, CallStatus::ok) << dtype_name(t) << ": " << whole.message;
      for (int64_t b = 0; b < 2; ++b) {
        const Problem alone = entry_with_its_slopes(p, b);
        ASSERT_EQ(alone.inconsistency(), "");
        const Outcome one = impl->run(alone);
        ASSERT_EQ(one.status, CallStatus::ok) << one.message;
        const std::size_t rows = one.out.size();
        EXPECT_EQ(std::vector<double>(whole.out.begin() + b * rows, whole.out.begin() + (b + 1) * rows), one.out)
            << GetParam() << " " << dtype_name(t) << " entry " << b;
      }
      const Comparison judged = compare_to_oracle(p, oracle(p), whole.out);
      EXPECT_TRUE(judged.ok) << GetParam() << " " << dtype_name(t) << " worst ratio " << judged.worst_ratio;
      EXPECT_GT(judged.judged, 0);
    }
}

INSTANTIATE_TEST_SUITE_P(Builtins, AlibiBatchReferences, ::testing::Values("reference", "naive", "online"));

// The oracle reads entry 1's slopes for entry 1: row 1 of entry 1 differs from
// what version 2's [heads] (entry 0's slopes) gives.
TEST(AlibiBatchOracle, ReadsEachEntrysRow) {
  const Problem p = per_batch_problem(DType::f64);
  Problem first_row = p;
  first_row.alibi_slopes.resize(2);
  first_row.alibi_batch_stride = 0;
  const OracleResult a = oracle(p), b = oracle(first_row);
  EXPECT_EQ(std::vector<double>(a.exact.begin(), a.exact.begin() + a.exact.size() / 2),
            std::vector<double>(b.exact.begin(), b.exact.begin() + b.exact.size() / 2));
  EXPECT_NE(std::vector<double>(a.exact.begin() + a.exact.size() / 2, a.exact.end()),
            std::vector<double>(b.exact.begin() + b.exact.size() / 2, b.exact.end()));
}

// Drawn only for ALIBI_BATCH (then in every case the law draws: required),
// consistent, with dense and gapped strides and rows that differ.
TEST(AlibiBatchDraws, OnlyForTheFeatureAndBothStrides) {
  GenOptions o;
  o.features = kAllFeatures;
  for (int seed = 0; seed < 40; ++seed) EXPECT_FALSE(sample_problem(o, seed).alibi_per_batch());
  o.features = kAllFeatures | kAlibiBatchFeature;
  o.required = kAlibiBatchFeature | ATTNCHECK_FEATURE_ALIBI;
  o.min_batch = 2;
  bool dense = false, gapped = false, rows_differ = false;
  for (int seed = 0; seed < 40; ++seed) {
    const Problem p = sample_problem(o, seed);
    ASSERT_TRUE(p.alibi_per_batch()) << seed;
    ASSERT_EQ(p.inconsistency(), "") << seed;
    dense = dense || p.alibi_batch_stride == p.shape.heads;
    gapped = gapped || p.alibi_batch_stride > p.shape.heads;
    for (int64_t h = 0; h < p.shape.heads; ++h) rows_differ = rows_differ || p.slope_of(h) != p.slope_of(p.shape.heads + h);
  }
  EXPECT_TRUE(dense);
  EXPECT_TRUE(gapped);
  EXPECT_TRUE(rows_differ);
}

// The shrinker offers version 2's [heads] (entry 0's row) and dense rows.
TEST(AlibiBatchShrinks, ToVersionTwosSlopesAndDenseRows) {
  const Problem p = per_batch_problem(DType::f32);
  bool to_v2 = false, to_dense = false;
  for (const Problem& c : shrink_problem(p)) {
    EXPECT_EQ(c.inconsistency(), "");
    to_v2 = to_v2 || (!c.alibi_per_batch() && c.alibi_slopes == std::vector<double>{0.5, 0.25});
    to_dense = to_dense || (c.alibi_batch_stride == 2 && c.alibi_slopes == p.alibi_slopes);
  }
  EXPECT_TRUE(to_v2);
  EXPECT_TRUE(to_dense);
}

TEST(AlibiBatchLaw, PassesTheReferencesAndCatchesTheFirstRowMember) {
  const Law* law = find_law("alibi_batch_matches_alone");
  ASSERT_NE(law, nullptr);
  const Problem p = per_batch_problem(DType::f32);
  for (const char* name : {"reference", "naive", "online"}) {
    const std::unique_ptr<Implementation> impl = make_builtin(name);
    const Verdict v = law->check(*impl, p);
    EXPECT_EQ(v.status, VerdictStatus::pass) << name << ": " << v.message;
  }
  const std::unique_ptr<Implementation> faulty = make_builtin("alibi_batch_first_row");
  const Verdict v = law->check(*faulty, p);
  EXPECT_EQ(v.status, VerdictStatus::fail) << v.message;
  EXPECT_NE(v.message.find("batch entry 1"), std::string::npos) << v.message;
  // Entry 0's row is every row's: the member is right.
  Problem same = p;
  same.alibi_slopes = {0.5, 0.25, 0.5, 0.25};
  EXPECT_EQ(law->check(*faulty, same).status, VerdictStatus::pass);
}

}  // namespace
}  // namespace attncheck
