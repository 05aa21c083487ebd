// ABI v3's broadcast K and V (docs/abi/plugin-abi-v3.md, "Broadcast K and V")
// end to end for forward calls: a Problem carries k_broadcast / v_broadcast
// with values equal across the expanded axes, the call sends one slice with
// stride 0 there, the references compute it exactly as the materialized call,
// the generator draws it only for BROADCAST_KV and shrinks it to the
// materialized call, and broadcast_equals_materialized passes the references
// and catches broadcast_stride_as_dense.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "call/call_layout.h"
#include "gen/generators.h"
#include "impls/in_process.h"
#include "law_framework/law.h"
#include "oracle/oracle.h"
#include "problem/kv_broadcast.h"
#include "problem/problem.h"

namespace attncheck {
namespace {

// Three entries, four query heads on two kv heads, values small multiples of
// 1/8; k expanded over kv heads, v over batch entries, kv_lens so that the
// source entry of v is the longest (entry 2).
Problem expanded_problem(DType t) {
  Problem p = make_problem(t, Shape{3, 4, 3, 5, 4, 3, 2});
  int n = 0;
  for (auto* x : {&p.q, &p.k, &p.v})
    for (double& e : *x) e = static_cast<double>((n++ * 7) % 11) / 8.0 - 0.5;
  p.kv_lens = {3, 4, 5};
  p.lse_requested = true;
  expand_kv(p, true, kKvBroadcastHeads);
  expand_kv(p, false, kKvBroadcastBatch);
  return p;
}

TEST(BroadcastKvProblem, ValuesAreEqualAcrossTheAxes) {
  const Problem p = expanded_problem(DType::f32);
  ASSERT_EQ(p.inconsistency(), "");
  EXPECT_TRUE(p.features() & kBroadcastKvFeature);
  EXPECT_FALSE(p.features() & kBackwardFeature);  // not the ABI's bit 16
  EXPECT_EQ(feature_list(kBroadcastKvFeature), "broadcast_kv");
  EXPECT_EQ(p.k[p.k_at(0 * 2 + 1, 2, 3)], p.k[p.k_at(0 * 2 + 0, 2, 3)]);  // kv head 1 reads head 0's keys
  EXPECT_EQ(p.v[p.v_at(0 * 2 + 1, 4, 2)], p.v[p.v_at(2 * 2 + 1, 4, 2)]);  // entry 0 reads entry 2's values
  EXPECT_FALSE(materialized(p).kv_broadcast());
  EXPECT_EQ(materialized(p).inconsistency(), "");
}

TEST(BroadcastKvProblem, InconsistenciesAreNamed) {
  auto refused = [](void (*edit)(Problem&), const char* words) {
    Problem p = expanded_problem(DType::f32);
    edit(p);
    const std::string why = p.inconsistency();
    EXPECT_NE(why.find(words), std::string::npos) << why;
  };
  refused([](Problem& p) { p.k[p.k_at(1, 0, 0)] += 1; }, "k[0][1][0][0] differs from the slice it repeats");
  refused([](Problem& p) { p.v_broadcast = 4; }, "must be 0..3");
  refused([](Problem& p) { p.dout.assign(static_cast<std::size_t>(p.shape.out_size()), 0.0); }, "backward");
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

TEST(BroadcastKvCall, OneSliceWithStrideZero) {
  const Problem p = expanded_problem(DType::f32);
  Region r(p);
  const attncheck_view& k = r.call.v2.k;
  const attncheck_view& v = r.call.v2.v;
  EXPECT_EQ(k.stride[1], 0);  // every kv head reads head 0's keys
  EXPECT_EQ(k.stride[0], 5 * 4);  // one head of [kv_len][head_dim] per entry
  EXPECT_EQ(r.layout.k_bytes, std::size_t{3 * 5 * 4 * 4});
  EXPECT_EQ(v.stride[0], 0);  // every entry reads one entry's values
  EXPECT_EQ(v.stride[1], 5 * 3);
  EXPECT_EQ(r.layout.v_bytes, std::size_t{2 * 5 * 3 * 4});
  const float* kd = static_cast<const float*>(k.data);
  EXPECT_EQ(kd[2 * 20 + 3 * 4 + 1], static_cast<float>(p.k[p.k_at(2 * 2 + 1, 3, 1)]));
  Region dense(materialized(p));
  EXPECT_NE(dense.call.v2.k.stride[1], 0);
  EXPECT_EQ(dense.layout.k_bytes, std::size_t{3 * 2 * 5 * 4 * 4});
}

class BroadcastKvReferences : public ::testing::TestWithParam<const char*> {};

// The expanded call equals the materialized one bit for bit, and the oracle accepts it.
TEST_P(BroadcastKvReferences, ExpandedEqualsMaterialized) {
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    const Problem p = expanded_problem(t);
    const std::unique_ptr<Implementation> impl = make_builtin(GetParam());
    ASSERT_TRUE(impl->features() & kBroadcastKvFeature);
    const Outcome a = impl->run(p), b = impl->run(materialized(p));
    ASSERT_EQ(a.status, CallStatus::ok) << dtype_name(t) << ": " << a.message;
    ASSERT_EQ(b.status, CallStatus::ok) << b.message;
    EXPECT_EQ(a.out, b.out) << GetParam() << " " << dtype_name(t);
    const Comparison judged = compare_to_oracle(p, oracle(p), a.out);
    EXPECT_TRUE(judged.ok) << GetParam() << " " << dtype_name(t) << " worst ratio " << judged.worst_ratio;
    EXPECT_GT(judged.judged, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Builtins, BroadcastKvReferences, ::testing::Values("reference", "naive", "online"));

// Drawn only for BROADCAST_KV (then in every case that has two entries or kv
// heads), consistent, over both axes; shrunk to the materialized call.
TEST(BroadcastKvDraws, OnlyForTheFeatureAndShrunkToDense) {
  GenOptions o;
  o.features = kAllFeatures;
  for (int seed = 0; seed < 40; ++seed) EXPECT_FALSE(sample_problem(o, seed).kv_broadcast());
  o.features = kAllFeatures | kBroadcastKvFeature;
  o.required = kBroadcastKvFeature;
  o.min_batch = 2;
  bool batch = false, heads = false;
  for (int seed = 0; seed < 40; ++seed) {
    const Problem p = sample_problem(o, seed);
    ASSERT_TRUE(p.kv_broadcast()) << seed;
    ASSERT_EQ(p.inconsistency(), "") << seed;
    batch = batch || ((p.k_broadcast | p.v_broadcast) & kKvBroadcastBatch);
    heads = heads || ((p.k_broadcast | p.v_broadcast) & kKvBroadcastHeads);
  }
  EXPECT_TRUE(batch);
  EXPECT_TRUE(heads);
  bool to_dense = false;
  for (const Problem& c : shrink_problem(expanded_problem(DType::f32))) {
    EXPECT_EQ(c.inconsistency(), "");
    to_dense = to_dense || !c.kv_broadcast();
  }
  EXPECT_TRUE(to_dense);
}

TEST(BroadcastKvLaw, PassesTheReferencesAndCatchesTheDenseStrideMember) {
  const Law* law = find_law("broadcast_equals_materialized");
  ASSERT_NE(law, nullptr);
  const Problem p = expanded_problem(DType::f32);
  for (const char* name : {"reference", "naive", "online"}) {
    const std::unique_ptr<Implementation> impl = make_builtin(name);
    const Verdict v = law->check(*impl, p);
    EXPECT_EQ(v.status, VerdictStatus::pass) << name << ": " << v.message;
  }
  const std::unique_ptr<Implementation> faulty = make_builtin("broadcast_stride_as_dense");
  const Verdict v = law->check(*faulty, p);
  EXPECT_EQ(v.status, VerdictStatus::fail) << v.message;
  EXPECT_NE(v.message.find("differs from the same values materialized"), std::string::npos) << v.message;
  EXPECT_EQ(law->check(*faulty, materialized(p)).status, VerdictStatus::not_applicable);
}

}  // namespace
}  // namespace attncheck
