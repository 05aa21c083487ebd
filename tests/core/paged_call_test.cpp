// ABI v3's paged keys (docs/abi/plugin-abi-v3.md, "Paged caches") end to end
// for forward calls: a Problem carries block_table, max_pages_per_seq,
// num_pages, page_size and page_poison (k and v stay the sequences' logical
// keys; aliased slots must agree), the call lays k and v out as the pool
// [num_pages][page_size][kv_heads][dim] with every slot no sequence reads
// live poisoned, and the references (reference, naive, online, in process
// through attncheck_call_v3) compute a paged call exactly as the same keys
// padded, aliases and entries past the used pages included.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "call/call_layout.h"
#include "gen/generators.h"
#include "impls/in_process.h"
#include "oracle/oracle.h"
#include "problem/paging.h"
#include "problem/problem.h"

namespace attncheck {
namespace {

// Three sequences with 5, 0 and 7 keys of kv_len 7, two query heads a kv
// head (head_dim 4, value_dim 3), values small integers times 1/8 (exact in
// every dtype).
Problem padded_keys(DType t, int64_t kv_heads = 1) {
  Problem p = make_problem(t, Shape{3, 2 * kv_heads, 3, 7, 4, 3, kv_heads});
  auto fill = [&](std::vector<double>& x, int salt) {
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((i * 7 + salt) % 11) / 8.0 - 0.5;
  };
  fill(p.q, 1), fill(p.k, 3), fill(p.v, 5);
  p.kv_lens = {5, 0, 7};
  p.lse_requested = true;
  return p;
}

// The same keys paged: sequence 0 in pages 4, 1, 6 (its last page half
// used), sequence 2 in pages 0, 3, 5, 2; page 7 unread; entries past the used
// ones name another sequence's page (2), a page twice, or the unread page.
// The table is [3][4].
Problem paged_keys(DType t, int64_t kv_heads = 1) {
  Problem p = padded_keys(t, kv_heads);
  p.page_size = 2;
  p.max_pages_per_seq = 4;
  p.num_pages = 8;
  p.block_table = {4, 1, 6, 2,   // sequence 0: 3 pages read, the 4th is sequence 2's page
                   7, 7, 7, 7,   // sequence 1: no key, every entry the unread page
                   0, 3, 5, 2};  // sequence 2: 4 pages, the last half used
  return p;
}

// Sequence 2's first page aliased into sequence 0's second entry: sequence
// 0's keys 2 and 3 must then be sequence 2's keys 0 and 1.
Problem aliased_keys(DType t) {
  Problem p = paged_keys(t);
  p.block_table[1] = 0;
  const int64_t kvh = p.shape.kv_head_count();
  for (int64_t h = 0; h < kvh; ++h)
    for (int64_t j = 0; j < 2; ++j) {
      for (int64_t d = 0; d < p.shape.head_dim; ++d) p.k[p.k_at(0 * kvh + h, 2 + j, d)] = p.k[p.k_at(2 * kvh + h, j, d)];
      for (int64_t c = 0; c < p.shape.value_dim; ++c) p.v[p.v_at(0 * kvh + h, 2 + j, c)] = p.v[p.v_at(2 * kvh + h, j, c)];
    }
  return p;
}

TEST(PagedProblem, FeaturesAndConsistency) {
  const Problem p = paged_keys(DType::f32);
  ASSERT_EQ(p.inconsistency(), "");
  EXPECT_TRUE(p.features() & kPagedFeature);
  EXPECT_FALSE(padded_keys(DType::f32).features() & kPagedFeature);
  EXPECT_EQ(feature_list(kPagedFeature), "paged");
  EXPECT_EQ(p.pages_used_by(0), 3);
  EXPECT_EQ(p.pages_used_by(1), 0);
  EXPECT_EQ(p.page_of(2, 6), 2);
  EXPECT_EQ(aliased_keys(DType::f32).inconsistency(), "");
  EXPECT_NE(p.describe().find("block_table"), std::string::npos);
}

TEST(PagedProblem, InconsistentPagingIsNamed) {
  auto refused = [](void (*edit)(Problem&), const char* words) {
    Problem p = paged_keys(DType::f32);
    edit(p);
    const std::string why = p.inconsistency();
    EXPECT_NE(why.find(words), std::string::npos) << why;
  };
  refused([](Problem& p) { p.block_table[5] = 8; }, "block_table[5] = 8 is not a page of 0..7");
  refused([](Problem& p) { p.block_table.pop_back(); }, "block_table holds 11 entries but batch * max_pages_per_seq = 12");
  refused([](Problem& p) { p.max_pages_per_seq = 3, p.block_table.resize(9); }, "kv_len = 7 is past max_pages_per_seq");
  refused([](Problem& p) { p.block_table[1] = 0; }, "share slot 0 of page 0 but differ");  // an alias with other keys
  refused([](Problem& p) { p.page_poison = 4; }, "page_poison is not 0..3");
  refused([](Problem& p) { p.block_table.clear(); }, "without a block_table");
  refused([](Problem& p) { p.cu_seqlens_k = {0, 5, 5, 12}, p.total_k = 12, p.kv_lens.clear(); }, "cu_seqlens_k");
  refused([](Problem& p) { p.dout.assign(static_cast<std::size_t>(p.shape.out_size()), 0.0); },
          "backward is never called for paged calls");
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

TEST(PagedCall, PoolIsDensePagesWithPoisonedDeadSlots) {
  const Problem paged = paged_keys(DType::f32, 2);  // two kv heads: the slot stride is kv_heads * head_dim
  ASSERT_EQ(paged.inconsistency(), "");
  Region r(paged);
  const attncheck_call_v3& c = r.call;
  ASSERT_NE(c.block_table, nullptr);
  EXPECT_EQ(c.max_pages_per_seq, 4);
  EXPECT_EQ(c.num_pages, 8);
  EXPECT_EQ(c.page_size, 2);
  EXPECT_EQ(c.block_table[9], 3);
  EXPECT_EQ(c.cu_seqlens_k, nullptr);
  // k: [num_pages][page_size][kv_heads][head_dim] = strides {16, 4, 8, 1}.
  EXPECT_EQ(c.v2.k.stride[0], 16);
  EXPECT_EQ(c.v2.k.stride[1], 4);
  EXPECT_EQ(c.v2.k.stride[2], 8);
  EXPECT_EQ(c.v2.v.stride[2], 6);
  EXPECT_EQ(r.layout.k_bytes, std::size_t{8 * 2 * 2 * 4 * 4});
  const float* k = static_cast<const float*>(c.v2.k.data);
  // Key 3 of sequence 0, kv head 1, channel 2: page 1 (entry 1), slot 1.
  EXPECT_EQ(k[1 * 16 + 1 * 4 + 1 * 8 + 2], static_cast<float>(paged.k[paged.k_at(0 * 2 + 1, 3, 2)]));
  // Key 6 of sequence 2: page 2 (entry 3), slot 0.
  EXPECT_EQ(k[2 * 16 + 0 * 4 + 0 * 8 + 1], static_cast<float>(paged.k[paged.k_at(2 * 2 + 0, 6, 1)]));
  // Dead: slot 1 of page 6 (sequence 0's key 5 does not exist), slot 1 of
  // page 2 (past sequence 2's 7 keys), the whole unread page 7.
  for (int64_t e = 0; e < 8; ++e) {
    EXPECT_TRUE(std::isnan(k[6 * 16 + 1 * 8 + e])) << e;
    EXPECT_TRUE(std::isnan(k[2 * 16 + 1 * 8 + e])) << e;
  }
  for (int64_t e = 0; e < 16; ++e) EXPECT_TRUE(std::isnan(k[7 * 16 + e])) << e;
  // Another poison: +inf in every dead slot, and the live ones as before.
  Problem inf = paged;
  inf.page_poison = 1;
  Region ri(inf);
  const float* ki = static_cast<const float*>(ri.call.v2.k.data);
  EXPECT_TRUE(std::isinf(ki[7 * 16]) && ki[7 * 16] > 0);
  EXPECT_EQ(ki[1 * 16 + 1 * 4 + 1 * 8 + 2], k[1 * 16 + 1 * 4 + 1 * 8 + 2]);
  // The table is an input: changed by the callee, the call is an out_of_bounds_write.
  const_cast<int32_t*>(r.call.block_table)[11] = 1;
  const Outcome o = outcome_from_return(ATTNCHECK_OK, "", paged, r.layout, r.bytes.get());
  EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
  EXPECT_NE(o.message.find("block_table"), std::string::npos) << o.message;
  // An unpaged problem's v3 call is neutral.
  Region padded(padded_keys(DType::f32));
  EXPECT_EQ(padded.call.block_table, nullptr);
  EXPECT_EQ(padded.call.page_size, 0);
}

// With STRIDES the pool's axes follow k's and v's layouts over (page, slot,
// kv head): order {page, kv head, slot} is FlashInfer's HND, gaps poisoned.
TEST(PagedCall, LayoutsOrderThePoolHndWithGaps) {
  Problem p = paged_keys(DType::f32, 2);
  // The layout's axes are (page, slot, kv head): order {0, 2, 1} is HND, and
  // gap[2] one element after each kv head's slots.
  p.layouts.k = TensorLayout{{0, 2, 1}, {0, 0, 1}};
  p.layouts.v = TensorLayout{{0, 2, 1}, {0, 0, 0}};  // HND dense
  ASSERT_EQ(p.inconsistency(), "");
  EXPECT_TRUE(p.features() & ATTNCHECK_FEATURE_STRIDES);
  Region r(p);
  const attncheck_call_v3& c = r.call;
  // v: [num_pages][kv_heads][page_size][value_dim] = strides {12, 6, 3, 1}.
  EXPECT_EQ(c.v2.v.stride[0], 12);
  EXPECT_EQ(c.v2.v.stride[1], 6);
  EXPECT_EQ(c.v2.v.stride[2], 3);
  const float* v = static_cast<const float*>(c.v2.v.data);
  // Key 3 of sequence 0 (page 1, slot 1), kv head 1, channel 2.
  EXPECT_EQ(v[1 * 12 + 1 * 6 + 1 * 3 + 2], static_cast<float>(p.v[p.v_at(0 * 2 + 1, 3, 2)]));
  // k: slots 4 apart, kv heads 2 slots and the gap (9) apart, pages 2 kv heads (18).
  const int64_t* ks = c.v2.k.stride;
  EXPECT_EQ(ks[2], 4);
  EXPECT_EQ(ks[1], 2 * 4 + 1);
  EXPECT_EQ(ks[0], 2 * (2 * 4 + 1));
  const float* k = static_cast<const float*>(c.v2.k.data);
  EXPECT_EQ(k[1 * ks[0] + 1 * ks[1] + 1 * ks[2] + 2], static_cast<float>(p.k[p.k_at(0 * 2 + 1, 3, 2)]));
  EXPECT_TRUE(std::isnan(k[ks[1] - 1]));  // a gap after kv head 0's slots of page 0
  for (const char* name : {"reference", "naive", "online"}) {
    const Outcome a = make_builtin(name)->run(p), b = make_builtin(name)->run(unpaged(paged_keys(DType::f32, 2)));
    ASSERT_EQ(a.status, CallStatus::ok) << a.message;
    EXPECT_EQ(a.out, b.out) << name;
  }
}

class PagedReferences : public ::testing::TestWithParam<const char*> {};

// Bit for bit the padded call's out and lse, for the plain table, the aliased
// one, pages of one and of 256 keys, packed queries and every poison.
TEST_P(PagedReferences, PagedEqualsPaddedBitForBit) {
  const std::unique_ptr<Implementation> impl = make_builtin(GetParam());
  ASSERT_TRUE(impl->features() & kPagedFeature);
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (Causal causal : {Causal::none, Causal::bottom_right}) {
      Problem base = paged_keys(t);
      base.causal = causal;
      Problem aliased = aliased_keys(t);
      aliased.causal = causal;
      Problem packed_q = aliased;
      packed_q.cu_seqlens_q = {0, 2, 3, 6}, packed_q.total_q = 7;
      std::vector<Problem> cases = {base, aliased, paged_plainly(unpaged(base), 1), paged_plainly(unpaged(base), 256),
                                    packed_q};
      for (int64_t poison = 1; poison < kPagePoisonCodes; ++poison) {
        cases.push_back(base);
        cases.back().page_poison = poison;
      }
      for (const Problem& paged : cases) {
        ASSERT_EQ(paged.inconsistency(), "") << paged.header();
        const Problem padded = unpaged(paged);
        const Outcome a = impl->run(paged), b = impl->run(padded);
        ASSERT_EQ(a.status, CallStatus::ok) << dtype_name(t) << ": " << a.message;
        ASSERT_EQ(b.status, CallStatus::ok) << b.message;
        EXPECT_EQ(a.out, b.out) << GetParam() << " " << paged.header();
        ASSERT_EQ(a.lse.size(), b.lse.size());
        for (std::size_t i = 0; i < a.lse.size(); ++i) EXPECT_EQ(a.lse[i], b.lse[i]) << "lse row " << i;
        const OracleResult oa = oracle(paged);
        EXPECT_TRUE(compare_to_oracle(paged, oa, a.out).ok) << GetParam() << " " << paged.header();
      }
    }
}

// A call derived from a paged case by a transform that forgot the paging
// (a table of another batch) is never laid out: "not called", the checker's.
TEST(PagedCall, InconsistentPagingIsNeverSent) {
  Problem p = paged_keys(DType::f32);
  p.block_table.resize(8);
  ASSERT_NE(p.inconsistency(), "");
  const Outcome o = make_builtin("reference")->run(p);
  EXPECT_EQ(o.status, CallStatus::unsupported);
  EXPECT_EQ(o.message.rfind("not called: the checker built an inconsistent paged call", 0), 0u) << o.message;
}

// The generator pages only when PAGED is among the features, and then draws
// every case paged (required), consistent, in every form the spec names:
// pages of 1 and 256 keys, sequences shorter than one page, a page in two
// rows and twice in one row, unread entries naming another sequence's page
// or an unread page, unread pages, every poison, strided pools (STRIDES).
TEST(PagedDraws, PagedCasesComeInEveryForm) {
  GenOptions o;
  o.features = kAllFeatures | kPagedFeature | kPackedFeature;
  o.required = kPagedFeature;
  int one = 0, big = 0, short_seq = 0, across = 0, within = 0, unread_live = 0, unread_page = 0, packed_q = 0, strided = 0;
  std::vector<int> poisons(kPagePoisonCodes);
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    const Problem p = sample_problem(o, seed, 30);
    ASSERT_EQ(p.inconsistency(), "") << "seed " << seed;
    ASSERT_TRUE(p.paged()) << "seed " << seed;
    one += p.page_size == 1;
    big += p.page_size == 256;
    packed_q += p.packed_q();
    strided += !p.layouts.k.dense_bhsd() || !p.layouts.v.dense_bhsd();  // the pool's axes reordered or gapped
    ++poisons[static_cast<std::size_t>(p.page_poison)];
    const std::vector<bool> live = live_slots(p);
    std::vector<int64_t> row_of(static_cast<std::size_t>(p.num_pages), -1);
    bool read[1024] = {};
    for (int64_t b = 0; b < p.shape.batch; ++b) {
      short_seq += p.kv_len_of(b) > 0 && p.kv_len_of(b) < p.page_size;
      std::vector<int> seen(static_cast<std::size_t>(p.num_pages));
      for (int64_t e = 0; e < p.pages_used_by(b); ++e) {
        const int32_t g = p.block_table[static_cast<std::size_t>(b * p.max_pages_per_seq + e)];
        within += ++seen[static_cast<std::size_t>(g)] == 2;
        across += row_of[static_cast<std::size_t>(g)] >= 0 && row_of[static_cast<std::size_t>(g)] != b;
        row_of[static_cast<std::size_t>(g)] = b;
        if (g < 1024) read[g] = true;
      }
    }
    for (int64_t b = 0; b < p.shape.batch; ++b)
      for (int64_t e = p.pages_used_by(b); e < p.max_pages_per_seq; ++e) {
        const int32_t g = p.block_table[static_cast<std::size_t>(b * p.max_pages_per_seq + e)];
        unread_live += g < 1024 && read[g];
        unread_page += g < 1024 && !read[g];
      }
    EXPECT_EQ(live.size(), static_cast<std::size_t>(p.num_pages * p.page_size));
  }
  EXPECT_GT(one, 10);
  EXPECT_GT(big, 10);
  EXPECT_GT(short_seq, 30);
  EXPECT_GT(across, 10);
  EXPECT_GT(within, 5);
  EXPECT_GT(unread_live, 10);
  EXPECT_GT(unread_page, 10);
  EXPECT_GT(packed_q, 10);
  EXPECT_GT(strided, 30);
  for (int n : poisons) EXPECT_GT(n, 20);
  o.features = kAllFeatures | kPackedFeature;
  o.required = 0;
  for (uint64_t seed = 1; seed <= 50; ++seed) EXPECT_FALSE(sample_problem(o, seed, 30).paged()) << seed;
}

// Shrinking offers the case unpaged (the same keys padded) and with plainer
// pages, and every candidate of a paged case is consistent.
TEST(PagedDraws, ShrinkingGoesTowardUnpagedAndStaysConsistent) {
  GenOptions o;
  o.features = kAllFeatures | kPagedFeature;
  o.required = kPagedFeature;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const Problem p = sample_problem(o, seed, 30);
    bool unpaged_offered = false, smaller_page = false;
    for (const Problem& c : shrink_problem(p, o)) {
      ASSERT_EQ(c.inconsistency(), "") << "seed " << seed << ": " << c.header();
      unpaged_offered = unpaged_offered || c == unpaged(p);  // by the bits: padding keys may be NaN
      smaller_page = smaller_page || (c.paged() && c.page_size < p.page_size);
    }
    EXPECT_TRUE(unpaged_offered) << "seed " << seed;
    EXPECT_EQ(smaller_page, p.page_size > 1) << "seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(Builtins, PagedReferences, ::testing::Values("reference", "naive", "online"));

}  // namespace
}  // namespace attncheck
