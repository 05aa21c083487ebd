// ABI v3's packed batches (docs/abi/plugin-abi-v3.md, "Packed batches") end
// to end for forward calls: a Problem carries cu_seqlens_q/k and total_q/k
// (its lengths follow the slots), the call lays q/out and k/v out dense
// [total][heads][dim] with stride[0] = 0 and NaN in the slack, a write into
// out's slack or padding rows is an out_of_bounds_write, and the references
// (reference, naive, online, in process through attncheck_call_v3) compute a
// packed call exactly as the padded call of the same sequences.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "call/call_layout.h"
#include "gen/generators.h"
#include "impls/in_process.h"
#include "oracle/oracle.h"
#include "problem/problem.h"

namespace attncheck {
namespace {

// Sequences of slot lengths {3, 0, 5} (queries) and {4, 0, 6} (keys) in
// padded extents q_len 5, kv_len 7, two query heads on one kv head, values
// small integers times 1/8 (exact in every dtype).
Problem padded_sequences(DType t) {
  Problem p = make_problem(t, Shape{3, 2, 5, 7, 4, 3, 1});
  auto fill = [&](std::vector<double>& x, int salt) {
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((i * 7 + salt) % 11) / 8.0 - 0.5;
  };
  fill(p.q, 1), fill(p.k, 3), fill(p.v, 5);
  p.q_lens = {3, 0, 5};
  p.kv_lens = {4, 0, 6};
  p.lse_requested = true;
  return p;
}

// The same sequences packed: slots exactly the lengths, `slack` rows after them.
Problem packed_sequences(DType t, int64_t slack = 2) {
  Problem p = padded_sequences(t);
  p.cu_seqlens_q = {0, 3, 3, 8};
  p.cu_seqlens_k = {0, 4, 4, 10};
  p.total_q = 8 + slack;
  p.total_k = 10 + slack;
  p.q_lens.clear();
  p.kv_lens.clear();
  return p;
}

TEST(PackedProblem, LengthsFollowTheSlots) {
  const Problem p = packed_sequences(DType::f32);
  ASSERT_EQ(p.inconsistency(), "");
  EXPECT_EQ(p.q_len_of(0), 3);
  EXPECT_EQ(p.q_len_of(1), 0);
  EXPECT_EQ(p.kv_len_of(2), 6);
  EXPECT_TRUE(p.features() & kPackedFeature);
  EXPECT_FALSE(padded_sequences(DType::f32).features() & kPackedFeature);
  EXPECT_EQ(feature_list(kPackedFeature), "packed");
}

TEST(PackedProblem, InconsistentPackingIsNamed) {
  auto refused = [](void (*edit)(Problem&), const char* words) {
    Problem p = packed_sequences(DType::f32);
    edit(p);
    const std::string why = p.inconsistency();
    EXPECT_NE(why.find(words), std::string::npos) << why;
  };
  refused([](Problem& p) { p.cu_seqlens_q[0] = 1; }, "cu_seqlens_q[0] = 1");
  refused([](Problem& p) { p.cu_seqlens_q = {0, 3, 3, 9}; }, "outside 0..5");      // a slot of 6 > q_len
  refused([](Problem& p) { p.cu_seqlens_k = {0, 4, 3, 10}; }, "outside 0..7");     // decreasing
  refused([](Problem& p) { p.total_k = 9; }, "total_k = 9 is below");
  refused([](Problem& p) { p.cu_seqlens_q.clear(); }, "total_q = 10 without cu_seqlens_q");
  refused([](Problem& p) { p.q_lens = {4, 0, 5}; }, "q_lens[0] = 4 is longer than its packed slot (3)");
  refused([](Problem& p) { p.cu_seqlens_k.pop_back(); }, "cu_seqlens_k holds 3 entries but batch + 1 = 4");
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

TEST(PackedCall, ViewsAreDenseTotalRowsWithNaNSlack) {
  const Problem p = packed_sequences(DType::f32);
  Region r(p);
  const attncheck_call_v3& c = r.call;
  ASSERT_NE(c.cu_seqlens_q, nullptr);
  EXPECT_EQ(c.cu_seqlens_q[3], 8);
  EXPECT_EQ(c.cu_seqlens_k[1], 4);
  EXPECT_EQ(c.total_q, 10);
  EXPECT_EQ(c.total_k, 12);
  // q: [total_q][heads][head_dim], stride[0] = 0.
  EXPECT_EQ(c.v2.q.stride[0], 0);
  EXPECT_EQ(c.v2.q.stride[1], 4);
  EXPECT_EQ(c.v2.q.stride[2], 8);
  EXPECT_EQ(c.v2.v.stride[2], 3);  // one kv head of value_dim 3
  EXPECT_EQ(r.layout.q_bytes, std::size_t{10 * 2 * 4 * 4});
  const float* q = static_cast<const float*>(c.v2.q.data);
  // Row 1 of sequence 2, head 1, channel 2 is packed row 3 + 1.
  EXPECT_EQ(q[(3 + 1) * 8 + 1 * 4 + 2], static_cast<float>(p.q[p.q_at(2 * 2 + 1, 1, 2)]));
  for (int64_t r0 = 8; r0 < 10; ++r0)  // the slack rows
    for (int64_t e = 0; e < 8; ++e) EXPECT_TRUE(std::isnan(q[r0 * 8 + e])) << "slack row " << r0;
  const float* k = static_cast<const float*>(c.v2.k.data);
  EXPECT_EQ(k[(4 + 5) * 4 + 0], static_cast<float>(p.k[p.k_at(2, 5, 0)]));
  EXPECT_TRUE(std::isnan(k[11 * 4]));
  // A padded problem's v3 call is neutral.
  Region padded(padded_sequences(DType::f32));
  EXPECT_EQ(padded.call.cu_seqlens_q, nullptr);
  EXPECT_EQ(padded.call.total_k, 0);
}

// Writes every live out row and lse entry, then `extra` into one packed row of out.
Outcome written(const Problem& p, Region& r, int64_t extra_row) {
  auto* out = static_cast<float*>(r.call.v2.out.data);
  const int64_t row = r.call.v2.out.stride[2];
  for (int64_t b = 0; b < p.shape.batch; ++b)
    for (int64_t i = 0; i < p.q_len_of(b); ++i)
      for (int64_t e = 0; e < row; ++e) out[(p.cu_seqlens_q[b] + i) * row + e] = 0.25f;
  for (int64_t b = 0; b < p.shape.batch; ++b)
    for (int64_t h = 0; h < p.shape.heads; ++h)
      for (int64_t i = 0; i < p.q_len_of(b); ++i) r.call.v2.lse[(b * p.shape.heads + h) * p.shape.q_len + i] = 1.0f;
  if (extra_row >= 0) out[extra_row * row] = 0.0f;
  return outcome_from_return(ATTNCHECK_OK, "", p, r.layout, r.bytes.get());
}

TEST(PackedCall, OutputSlackAndPaddingAreGuarded) {
  Problem p = packed_sequences(DType::f32);
  {
    Region r(p);
    const Outcome o = written(p, r, -1);
    ASSERT_EQ(o.status, CallStatus::ok) << o.message;
    EXPECT_EQ(o.out[p.out_at(2 * 2 + 1, 4, 2)], 0.25);  // decoded at its padded place
    EXPECT_EQ(o.out[p.out_at(1 * 2, 0, 0)], 0.0);       // the empty sequence: padding
  }
  {
    Region r(p);
    const Outcome o = written(p, r, 8);  // the first slack row, written with zeros
    EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
    EXPECT_NE(o.message.find("slack row 8"), std::string::npos) << o.message;
  }
  p.q_lens = {2, 0, 5};  // row 2 of sequence 0's slot becomes padding
  Region r(p);
  const Outcome o = written(p, r, 2);
  EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
  EXPECT_NE(o.message.find("padding row 2"), std::string::npos) << o.message;
}

// The padded twin of a packed problem: the same sequences, lengths the slots'.
Problem padded_twin(const Problem& packed) {
  Problem p = packed;
  p.q_lens.assign(p.shape.batch, 0);
  p.kv_lens.assign(p.shape.batch, 0);
  for (int64_t b = 0; b < p.shape.batch; ++b) p.q_lens[b] = static_cast<int32_t>(packed.q_len_of(b));
  for (int64_t b = 0; b < p.shape.batch; ++b) p.kv_lens[b] = static_cast<int32_t>(packed.kv_len_of(b));
  p.cu_seqlens_q.clear(), p.cu_seqlens_k.clear();
  p.total_q = p.total_k = 0;
  return p;
}

class PackedReferences : public ::testing::TestWithParam<const char*> {};

TEST_P(PackedReferences, PackedEqualsPaddedRowForRow) {
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (Causal causal : {Causal::none, Causal::bottom_right}) {
      Problem packed = packed_sequences(t);
      packed.causal = causal;
      const Problem padded = padded_twin(packed);
      ASSERT_EQ(padded.inconsistency(), "");
      const std::unique_ptr<Implementation> impl = make_builtin(GetParam());
      ASSERT_TRUE(impl->features() & kPackedFeature);
      const Outcome a = impl->run(packed), b = impl->run(padded);
      ASSERT_EQ(a.status, CallStatus::ok) << dtype_name(t) << ": " << a.message;
      ASSERT_EQ(b.status, CallStatus::ok) << b.message;
      EXPECT_EQ(a.out, b.out) << GetParam() << " " << dtype_name(t);
      ASSERT_EQ(a.lse.size(), b.lse.size());
      for (std::size_t i = 0; i < a.lse.size(); ++i)  // -inf rows compare equal; NaN never appears
        EXPECT_EQ(a.lse[i], b.lse[i]) << "lse row " << i;
      // The oracle judges the packed call as the padded one: the same exact values and bounds.
      const OracleResult oa = oracle(packed), ob = oracle(padded);
      EXPECT_EQ(oa.exact, ob.exact);
      EXPECT_EQ(oa.bound, ob.bound);
      const Comparison judged = compare_to_oracle(packed, oa, a.out);
      EXPECT_TRUE(judged.ok) << GetParam() << " worst ratio " << judged.worst_ratio;
      EXPECT_GT(judged.judged, 0);
    }
}

// The generator packs only when PACKED is among the features, and then draws
// every case packed (required), consistent, with empty sequences, slack rows,
// slots as long as q_len / kv_len and slots longer than their lengths.
TEST(PackedDraws, PackedCasesComeInEveryForm) {
  GenOptions o;
  o.features = kAllFeatures | kPackedFeature;
  o.required = kPackedFeature;
  int empty = 0, slack = 0, full_slot = 0, padded_slot = 0, both = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    const Problem p = sample_problem(o, seed, 30);
    ASSERT_EQ(p.inconsistency(), "") << "seed " << seed;
    ASSERT_TRUE(p.packed()) << "seed " << seed;
    both += p.packed_q() && p.packed_k();
    if (p.packed_q()) slack += p.total_q > std::max<int64_t>(1, p.cu_seqlens_q.back());
    for (int64_t b = 0; b < p.shape.batch; ++b) {
      empty += p.packed_q() && p.q_slot_of(b) == 0;
      full_slot += p.packed_k() && p.kv_slot_of(b) == p.shape.kv_len;
      padded_slot += p.packed_q() && p.q_len_of(b) < p.q_slot_of(b);
    }
  }
  EXPECT_GT(empty, 10);
  EXPECT_GT(slack, 30);
  EXPECT_GT(full_slot, 10);
  EXPECT_GT(padded_slot, 10);
  EXPECT_GT(both, 30);
  o.features = kAllFeatures;
  o.required = 0;
  for (uint64_t seed = 1; seed <= 50; ++seed) EXPECT_FALSE(sample_problem(o, seed, 30).packed()) << seed;
}

// Shrinking offers the case unpacked (the slots as lengths, the same sequences)
// and every candidate of a packed case is consistent (the shape's cuts re-pack).
TEST(PackedDraws, ShrinkingGoesTowardUnpackedAndStaysConsistent) {
  GenOptions o;
  o.features = kAllFeatures | kPackedFeature;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Problem p = sample_problem(o, seed, 30);
    if (!p.packed()) continue;
    bool unpacked = false;
    for (const Problem& c : shrink_problem(p, o)) {
      ASSERT_EQ(c.inconsistency(), "") << "seed " << seed << ": " << c.header();
      if (!c.packed() && c.shape == p.shape) {
        unpacked = true;
        for (int64_t b = 0; b < p.shape.batch; ++b) {
          EXPECT_EQ(c.q_len_of(b), p.q_len_of(b));
          EXPECT_EQ(c.kv_len_of(b), p.kv_len_of(b));
        }
      }
    }
    EXPECT_TRUE(unpacked) << "seed " << seed;
  }
}

// A call derived from a packed case by a transform that forgot the packing
// (cu_seqlens of another batch) is never laid out: "not called", the checker's.
TEST(PackedCall, InconsistentPackingIsNeverSent) {
  Problem p = packed_sequences(DType::f32);
  p.cu_seqlens_q = {0, 3, 8};  // batch 2's prefix sums on a batch of 3
  const Outcome o = make_builtin("reference")->run(p);
  EXPECT_EQ(o.status, CallStatus::unsupported);
  EXPECT_EQ(o.message.rfind("not called: the checker built an inconsistent packed call", 0), 0u) << o.message;
  EXPECT_NE(packed_sequences(DType::f32).describe().find("cu_seqlens_k"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Builtins, PackedReferences, ::testing::Values("reference", "naive", "online"));

}  // namespace
}  // namespace attncheck
