// ABI v3's packed laws sequence_order and bounds_inert (docs/abi/plugin-abi-v3.md,
// "Laws version 3 makes possible"): the calls they build (a packed batch with
// its sequences reordered; the same batch with larger q_len/kv_len bounds)
// keep every sequence's result exactly (the oracle's rows are the same), the
// references pass both laws bit for bit, the zoo's faults are caught
// (packed_outputs_sorted by sequence_order, packed_empty_split_nan by
// bounds_inert), a batch of one sequence is not judged by sequence_order, and
// bits are demanded exactly of a kernel that promises BATCH_INVARIANT.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "driver/law_run.h"
#include "impls/builtins.h"
#include "impls/in_process.h"
#include "impls/kernels.h"
#include "law_framework/law.h"
#include "law_framework/packed_calls.h"
#include "oracle/oracle.h"
#include "problem/problem.h"

namespace attncheck {
namespace {

const Law& packed_law(const char* name) {
  const Law* l = find_law(name);
  EXPECT_NE(l, nullptr) << name << " is no law";
  return *l;
}

// Three packed sequences, query slots {3, 0, 5} and key slots {4, 2, 6} in
// bounds q_len 5, kv_len 7 (one slack row each side), two query heads on one
// kv head, a mask per batch entry that hides key 1 of sequence 0 from every
// row, lse requested; values small multiples of 1/8 (exact in every dtype).
Problem three_sequences(DType t) {
  Problem p = make_problem(t, Shape{3, 2, 5, 7, 4, 3, 1});
  auto fill = [](std::vector<double>& x, int salt) {
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((i * 7 + salt) % 11) / 8.0 - 0.5;
  };
  fill(p.q, 1), fill(p.k, 3), fill(p.v, 5);
  p.cu_seqlens_q = {0, 3, 3, 8};
  p.cu_seqlens_k = {0, 4, 6, 12};
  p.total_q = 9, p.total_k = 13;
  p.mask.assign(static_cast<std::size_t>(p.shape.mask_size()), 1);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 5; ++i) p.mask[p.mask_at(h, i, 1)] = 0;
  p.lse_requested = true;
  return p;
}

bool same_bits(double x, double y) { return std::bit_cast<uint64_t>(x) == std::bit_cast<uint64_t>(y); }

// Row i of (sequence b, head h) of a's oracle equals row i of (sequence b2, h) of b's, out and lse.
void expect_same_rows(const Problem& a, int64_t b, const Problem& c, int64_t b2) {
  const OracleResult oa = oracle(a), oc = oracle(c);
  ASSERT_EQ(a.q_len_of(b), c.q_len_of(b2));
  for (int64_t h = 0; h < a.shape.heads; ++h)
    for (int64_t i = 0; i < a.q_len_of(b); ++i) {
      for (int64_t ch = 0; ch < a.shape.value_dim; ++ch) {
        const int64_t ka = a.out_at(b * a.shape.heads + h, i, ch), kc = c.out_at(b2 * c.shape.heads + h, i, ch);
        EXPECT_TRUE(same_bits(oa.exact[ka], oc.exact[kc])) << b << "/" << h << "/" << i;
        EXPECT_EQ(oa.bound[ka], oc.bound[kc]);
      }
      EXPECT_TRUE(same_bits(oa.lse_exact[(b * a.shape.heads + h) * a.shape.q_len + i],
                            oc.lse_exact[(b2 * c.shape.heads + h) * c.shape.q_len + i]));
    }
}

TEST(PackedTransforms, ReorderedSequencesKeepTheirRowsKeysAndMask) {
  const Problem p = three_sequences(DType::f32);
  ASSERT_EQ(p.inconsistency(), "");
  const Problem r = with_sequences_permuted(p, {2, 0, 1});
  ASSERT_EQ(r.inconsistency(), "");
  EXPECT_EQ(r.cu_seqlens_q, (std::vector<int32_t>{0, 5, 8, 8}));
  EXPECT_EQ(r.cu_seqlens_k, (std::vector<int32_t>{0, 6, 10, 12}));
  EXPECT_EQ(r.total_q, p.total_q);
  EXPECT_EQ(r.total_k, p.total_k);
  EXPECT_EQ(r.q[r.q_at(0, 0, 0)], p.q[p.q_at(2 * 2, 0, 0)]);
  EXPECT_EQ(r.mask[r.mask_at(1 * 2, 0, 1)], 0);  // sequence 0's mask went with it
  expect_same_rows(p, 0, r, 1);
  expect_same_rows(p, 2, r, 0);
}

TEST(PackedTransforms, RaisedBoundsKeepEverySequence) {
  Problem p = three_sequences(DType::bf16);
  p.q_lens = {2, 0, 5};  // lengths inside the slots stay the sequences' own
  const Problem r = with_bounds_raised(p, 3, 130);
  ASSERT_EQ(r.inconsistency(), "");
  EXPECT_EQ(r.shape.q_len, 8);
  EXPECT_EQ(r.shape.kv_len, 137);
  EXPECT_EQ(r.cu_seqlens_k, p.cu_seqlens_k);
  EXPECT_EQ(r.mask[r.mask_at(0, 1, 1)], 0);
  EXPECT_EQ(r.mask[r.mask_at(0, 1, 136)], 1);
  for (int64_t b = 0; b < 3; ++b) expect_same_rows(p, b, r, b);
  // Packed queries over padded keys with their lengths given: the keys' bound
  // grows by NaN padding keys, each sequence's keys kept.
  Problem padded_keys = p;
  padded_keys.cu_seqlens_k.clear(), padded_keys.total_k = 0;
  padded_keys.kv_lens = {4, 2, 6};
  ASSERT_EQ(padded_keys.inconsistency(), "");
  const Problem grown = with_bounds_raised(padded_keys, 0, 129);
  ASSERT_EQ(grown.inconsistency(), "");
  EXPECT_EQ(grown.shape.kv_len, 136);
  EXPECT_TRUE(std::isnan(grown.k[grown.k_at(2, 7, 0)]));  // a new padding key of sequence 2
  EXPECT_EQ(grown.k[grown.k_at(2, 5, 0)], padded_keys.k[padded_keys.k_at(2, 5, 0)]);
  for (int64_t b = 0; b < 3; ++b) expect_same_rows(padded_keys, b, grown, b);
}

TEST(SequenceOrder, ReferencesPassAndASortedEpilogueFails) {
  const Law& law = packed_law("sequence_order");
  for (const char* name : {"reference", "naive", "online"})
    for (DType t : {DType::f32, DType::f16}) {
      const Verdict v = check_case(law, *make_builtin(name), three_sequences(t));
      EXPECT_TRUE(v.passed()) << name << ": " << v.message;
    }
  const Verdict v = check_case(law, *make_builtin("packed_outputs_sorted"), three_sequences(DType::f32));
  ASSERT_TRUE(v.failed()) << v.message;
  EXPECT_NE(v.message.find("reordering the sequences changed"), std::string::npos) << v.message;
  // One sequence has no order to change: not judged.
  Problem one = make_problem(DType::f32, Shape{1, 1, 2, 2, 2, 2});
  one.cu_seqlens_q = {0, 2};
  one.total_q = 2;
  EXPECT_EQ(check_case(law, *make_builtin("reference"), one).status, VerdictStatus::not_applicable);
}

TEST(BoundsInert, ReferencesPassAndAnEmptySplitFails) {
  const Law& law = packed_law("bounds_inert");
  for (const char* name : {"reference", "naive", "online"})
    for (DType t : {DType::f32, DType::bf16}) {
      const Verdict v = check_case(law, *make_builtin(name), three_sequences(t));
      EXPECT_TRUE(v.passed()) << name << ": " << v.message;
    }
  const Verdict v = check_case(law, *make_builtin("packed_empty_split_nan"), three_sequences(DType::f32));
  ASSERT_TRUE(v.failed()) << v.message;
  EXPECT_NE(v.message.find("larger bounds"), std::string::npos) << v.message;
}

// A packed kernel whose order of the key sums (naive's or online's: the same
// result within the bound, other last bits) follows the place of the first
// sequence's slot length or the bound kv_len: fine without the promise, a
// failure with it.
RunOptions packed_options(uint64_t seed) {
  RunOptions o;
  o.seed = seed;
  o.cases = 30;
  o.min_judged = 10;
  o.gen.dtypes = {DType::f32};
  return o;
}

std::unique_ptr<InProcessImplementation> path_kernel(const char* name, bool (*online_path)(const attncheck_call_v3&),
                                                     uint32_t promises) {
  auto impl = std::make_unique<InProcessImplementation>(name, reference_forward_v2, kAllFeatures | kPackedFeature);
  impl->set_forward_v3([online_path](const attncheck_call_v3* c, char* err, size_t n) {
    return online_path(*c) ? online_forward_v3(c, err, n) : naive_forward_v3(c, err, n);
  });
  impl->set_promises(promises);
  return impl;
}

TEST(PackedPromises, BitsAreDemandedUnderBatchInvarianceOnly) {
  struct Row { const char* law; bool (*online_path)(const attncheck_call_v3&); const char* words; };
  const Row rows[] = {
      {"sequence_order",
       [](const attncheck_call_v3& c) {
         const int32_t* cu = c.cu_seqlens_q ? c.cu_seqlens_q : c.cu_seqlens_k;
         return cu && (cu[1] - cu[0]) % 2 == 1;
       },
       "reordering the sequences"},
      {"bounds_inert", [](const attncheck_call_v3& c) { return c.v2.kv_len > 100; }, "larger bounds"}};
  for (const Row& row : rows) {
    auto promised = path_kernel("path-by-place", row.online_path, ATTNCHECK_PROMISE_BATCH_INVARIANT);
    const LawReport r = run_law(packed_law(row.law), *promised, packed_options(7));
    ASSERT_EQ(r.status, LawStatus::fail) << row.law << ": " << r.message;
    EXPECT_NE(r.message.find(row.words), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("promises ATTNCHECK_PROMISE_BATCH_INVARIANT"), std::string::npos) << r.message;
    auto unpromised = path_kernel("path-by-place", row.online_path, ATTNCHECK_PROMISE_DETERMINISTIC);
    const LawReport u = run_law(packed_law(row.law), *unpromised, packed_options(7));
    EXPECT_EQ(u.status, LawStatus::pass) << row.law << ": " << u.message;
  }
}

}  // namespace
}  // namespace attncheck
