// The field list of a Problem (problem/problem_fields.h) and what is derived
// from it: Problem::operator== compares every field (doubles by their bits),
// and the --jobs result wire, the host's call wire, the oracle memo's key and
// the case hash each take every field they should, checked by walking the
// list itself (a field added to the list is checked without a line here),
// and by round trips of whole values over drawn problems with every feature.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "casefile/case_hash.h"
#include "run/law_result_wire.h"
#include "oracle/oracle_memo.h"
#include "host/call_wire.h"
#include "call/call_layout.h"
#include "gen/generators.h"
#include "gen/kv_format_draws.h"
#include "problem/paging.h"
#include "problem/problem_fields.h"

namespace attncheck {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double sign_flipped(double x) { return std::bit_cast<double>(std::bit_cast<uint64_t>(x) ^ (uint64_t{1} << 63)); }

// Another value of a field of any type a Problem holds (the same size where
// the type allows, so that only the value differs).
template <class T>
T changed(const T& x) {
  if constexpr (std::is_same_v<T, double>) return sign_flipped(x);
  else if constexpr (std::is_same_v<T, bool>) return !x;
  else if constexpr (std::is_same_v<T, int64_t>) return x + 1;
  else if constexpr (std::is_same_v<T, DType>) return x == DType::f32 ? DType::f64 : DType::f32;
  else if constexpr (std::is_same_v<T, Causal>) return x == Causal::none ? Causal::top_left : Causal::none;
  else if constexpr (std::is_same_v<T, KvFormat>) return x == KvFormat::int8 ? KvFormat::fp8_e4m3 : KvFormat::int8;
  else if constexpr (std::is_same_v<T, ScaleGranularity>)
    return x == ScaleGranularity::per_tensor ? ScaleGranularity::per_kv_head : ScaleGranularity::per_tensor;
  else if constexpr (std::is_same_v<T, Shape>) return Shape{x.batch + 1, x.heads, x.q_len, x.kv_len, x.head_dim, x.value_dim, x.kv_heads};
  else if constexpr (std::is_same_v<T, Broadcast>) return Broadcast{!x.per_batch, x.per_head, x.per_row};
  else if constexpr (std::is_same_v<T, ViewLayouts>) {
    T y = x;
    y.dq.gap[1] += 1;  // a gradient view: a field of the layouts' own `since`
    return y;
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    T y = x;
    if (y.empty()) y.push_back(0.5);
    else y[0] = sign_flipped(y[0]);
    return y;
  } else {
    T y = x;
    if (y.empty()) y.push_back(1);
    else y[0] = static_cast<typename T::value_type>(y[0] ^ 1);
    return y;
  }
}

GenOptions every_feature() {
  GenOptions g;
  g.dtypes = {DType::f32, DType::f64, DType::f16, DType::bf16};
  g.features = kEveryFeature;
  g.max_q_len = g.max_kv_len = g.max_head_dim = g.max_value_dim = 12;
  return g;
}

std::vector<Problem> drawn(int n) {
  std::vector<Problem> ps;
  for (int seed = 1; seed <= n; ++seed) ps.push_back(sample_problem(every_feature(), 1000 + seed, seed % 101));
  return ps;
}

// A backward problem that uses every feature, so that each field is live.
Problem busy_problem() {
  GenOptions g = every_feature();
  g.required = kEveryFeature & ~ATTNCHECK_FEATURE_STRIDES;
  for (uint64_t seed = 1;; ++seed) {
    Problem p = sample_problem(g, seed, 60);
    if ((p.features() | ATTNCHECK_FEATURE_STRIDES) == kEveryFeature && p.has_mask() && p.has_bias()) return p;
  }
}

TEST(ProblemEquality, DoublesCompareByTheirBits) {
  const Problem p = make_problem(DType::f32, Shape{1, 1, 1, 1, 1, 1});  // scale NaN: the default
  Problem q = p;
  EXPECT_EQ(p, q);
  q.scale = kNaN;
  EXPECT_EQ(p, q);  // the same NaN
  q.scale = -kNaN;
  EXPECT_NE(p, q);  // another call: it sends other bits
  Problem zero = p, minus_zero = p;
  zero.q = {0.0};
  minus_zero.q = {-0.0};
  EXPECT_NE(zero, minus_zero);
  // kv_heads 0 means "as many as heads": the same shape, the same call.
  Problem implicit = p;
  implicit.shape.kv_heads = 0;
  EXPECT_EQ(implicit, p);
}

// The busy problem packed (ABI v3) on both sides, consistently: forward
// (packed gradients are not laid out), dense views, every sequence's slot its
// whole q_len / kv_len (its own lengths dropped), one slack row per side.
Problem packed_busy_problem() {
  Problem p = busy_problem();
  p.dout.clear();
  p.layouts = ViewLayouts{};
  p.q_lens.clear(), p.kv_lens.clear();
  for (int64_t b = 0; b <= p.shape.batch; ++b) {
    p.cu_seqlens_q.push_back(static_cast<int32_t>(b * p.shape.q_len));
    p.cu_seqlens_k.push_back(static_cast<int32_t>(b * p.shape.kv_len));
  }
  p.total_q = p.cu_seqlens_q.back() + 1;
  p.total_k = p.cu_seqlens_k.back() + 1;
  return p;
}

// A packing field changed so that the packed problem stays consistent (a
// packing field changed alone in an unpacked problem makes an inconsistent
// one, which no case file holds): one more slack row, or the last slot one
// row shorter (the slack takes the row).
template <class T>
T changed_packing(const T& x) {
  if constexpr (std::is_same_v<T, int64_t>) return x + 1;
  else if constexpr (std::is_same_v<T, std::vector<int32_t>>) {
    T y = x;
    y.back() -= 1;
    return y;
  } else {
    return changed(x);  // not a packing field's type: never taken
  }
}

// The busy problem's forward with its keys paged (ABI v3): dense views, pages
// of 2 keys in order, one unread entry past each row's pages (page 0) and
// one unread page.
Problem paged_busy_problem() {
  Problem p = busy_problem();
  p.dout.clear();
  p.layouts = ViewLayouts{};
  p = paged_plainly(p, 2);
  p.max_pages_per_seq += 1;
  std::vector<int32_t> table;
  for (int64_t b = 0; b < p.shape.batch; ++b) {
    for (int64_t e = 0; e + 1 < p.max_pages_per_seq; ++e) table.push_back(p.block_table[b * (p.max_pages_per_seq - 1) + e]);
    table.push_back(0);
  }
  p.block_table = table;
  p.num_pages += 1;
  return p;
}

// The busy problem's forward with K stored as fp8_e4m3 per kv head and V as
// int8 per (batch, kv head) (ABI v3), in f32 when it was f64, dense views.
Problem formatted_busy_problem() {
  Problem p = busy_problem();
  p.dout.clear();
  p.layouts = ViewLayouts{};
  if (p.dtype == DType::f64) {
    p.dtype = DType::f32;
    round_tensors(p);
  }
  gen::RandomChoices r(5);
  gen::store_kv_side(r, p, true, KvFormat::fp8_e4m3, ScaleGranularity::per_kv_head);
  gen::store_kv_side(r, p, false, KvFormat::int8, ScaleGranularity::per_batch_kv_head);
  return p;
}

// A paging field changed so that the paged problem stays consistent (but
// max_pages_per_seq, which the table's length must follow): one more page,
// a larger page, another poison, the last (unread) table entry another page.
template <class T>
T changed_paging(const T& x) {
  if constexpr (std::is_same_v<T, int64_t>) return x + 1;
  else if constexpr (std::is_same_v<T, std::vector<int32_t>>) {
    T y = x;
    y.back() = 1;
    return y;
  } else {
    return changed(x);  // not a paging field's type: never taken
  }
}

// Each field of the list, changed alone, makes another problem; the oracle
// memo's key changes exactly for the fields the oracle reads; the case hash
// for every field the problem's file holds. Packing's fields (ABI v3) are
// held, and hashed, for a packed problem only (every other case keeps its
// name): they are changed in a packed problem, keeping it consistent.
TEST(ProblemFields, EachFieldCountsWhereItShould) {
  const Problem busy = busy_problem(), packed = packed_busy_problem(), paged = paged_busy_problem();
  const Problem formatted = formatted_busy_problem();
  ASSERT_EQ(formatted.inconsistency(), "");
  ASSERT_EQ(busy.inconsistency(), "");
  ASSERT_EQ(packed.inconsistency(), "");
  ASSERT_EQ(paged.inconsistency(), "");
  int fields = 0;
  for_each_field<Problem>(
      [&](const auto& f, const auto& value) {
        const bool packing = f.attrs.since == Since::packed, paging = f.attrs.since == Since::paged;
        const bool formats = f.attrs.since == Since::kv_formats;  // held and hashed for a formatted problem only
        const Problem& p = packing ? packed : paging ? paged : formats ? formatted : busy;
        const auto key = oracle_detail::memo_key(p);
        ASSERT_TRUE(key.has_value());
        CaseRecord rec;
        rec.law = "matches_oracle";
        rec.problem = p;
        Problem c = p;
        constexpr auto member = std::remove_cvref_t<decltype(f)>::member;
        c.*member = packing ? changed_packing(p.*member) : paging ? changed_paging(p.*member) : changed(p.*member);
        SCOPED_TRACE(f.name);
        if (packing || (paging && !same_member<member, &Problem::max_pages_per_seq>())) ASSERT_EQ(c.inconsistency(), "");
        EXPECT_NE(c, p);
        EXPECT_EQ(oracle_detail::memo_key(c) != key, f.attrs.oracle);
        CaseRecord changed_rec = rec;
        changed_rec.problem = c;
        EXPECT_NE(case_content_hash(changed_rec), case_content_hash(rec));
        ++fields;
      },
      busy);
  EXPECT_EQ(fields, 41);  // 36 + alibi_batch_stride (ABI v3 ALIBI_BATCH) + v_view_of_k (V_VIEW_OF_K) + k_broadcast, v_broadcast (BROADCAST_KV) + numerics
  // Packing the busy problem's forward changes its hash too.
  Problem forward = packed;
  forward.cu_seqlens_q.clear(), forward.cu_seqlens_k.clear();
  forward.total_q = forward.total_k = 0;
  CaseRecord a, b;
  a.law = b.law = "matches_oracle";
  a.problem = forward, b.problem = packed;
  EXPECT_NE(case_content_hash(a), case_content_hash(b));
  // Paging it too.
  a.problem = unpaged(paged), b.problem = paged;
  EXPECT_NE(case_content_hash(a), case_content_hash(b));
  // Storing K and V in formats too (the same real values in the dtype hash otherwise).
  Problem plain = formatted;
  gen::unstore_kv_side(plain, true);
  gen::unstore_kv_side(plain, false);
  a.problem = plain, b.problem = formatted;
  EXPECT_NE(case_content_hash(a), case_content_hash(b));
}

TEST(ProblemFields, LawResultWireRoundTripsWholeProblems) {
  std::vector<Problem> ps = drawn(300);
  Problem odd = busy_problem();
  odd.scale = -kNaN;
  odd.q[0] = -0.0;
  ps.push_back(odd);
  int backward = 0, v2 = 0;
  for (std::size_t i = 0; i + 1 < ps.size(); i += 2) {
    LawResult l;
    l.run.law = "matches_oracle";
    l.run.counterexample = ps[i];
    l.run.fault_case = ps[i + 1];
    LawResult back;
    ASSERT_TRUE(decode_law_result(encode_law_result(l), back));
    ASSERT_TRUE(back.run.counterexample && back.run.fault_case);
    EXPECT_EQ(*back.run.counterexample, ps[i]) << ps[i].header();
    EXPECT_EQ(*back.run.fault_case, ps[i + 1]) << ps[i + 1].header();
    backward += ps[i].is_backward();
    v2 += (ps[i].features() & ~kV1Features) != 0;
  }
  EXPECT_GT(backward, 10);
  EXPECT_GT(v2, 100);
}

// Every member of an ABI record, compared through its field list.
template <class S>
bool same_call(const S& a, const S& b) {
  bool same = true;
  for_each_field<S>(
      [&](const auto&, const auto& x, const auto& y) {
        using T = std::remove_cvref_t<decltype(x)>;
        if constexpr (std::is_same_v<T, attncheck_view> || std::is_same_v<T, attncheck_out_view>)
          same = same && x.data == y.data && std::memcmp(x.stride, y.stride, sizeof x.stride) == 0;
        else if constexpr (std::is_floating_point_v<T>)
          same = same && std::bit_cast<uint64_t>(x) == std::bit_cast<uint64_t>(y);
        else
          same = same && x == y;
      },
      a, b);
  return same;
}

TEST(ProblemFields, CallWireRoundTripsWholeCalls) {
  int with_grad = 0;
  for (const Problem& p : drawn(200)) {
    const CallLayout layout = layout_for(p, 2);
    std::vector<uint8_t> region(layout.total + 64);
    // The child maps the region elsewhere: the call rebased there is the call
    // made there, and back at the parent's address it is the parent's call.
    std::vector<uint8_t> child(layout.total + 64);
    const attncheck_call_v2 call = abi_call_v2(p, layout, region.data());
    const host::WireCallV2 w = host::to_wire(call, region.data());
    EXPECT_TRUE(same_call(host::from_wire(w, region.data()), call)) << p.header();
    const attncheck_call_v2 there = host::from_wire(w, child.data());
    EXPECT_EQ(static_cast<const uint8_t*>(there.q.data) - child.data(),
              static_cast<const uint8_t*>(call.q.data) - region.data());
    EXPECT_TRUE(same_call(host::from_wire(host::to_wire(there, child.data()), region.data()), call));
    if (p.is_backward()) {
      const attncheck_grad grad = abi_grad(p, layout, region.data());
      EXPECT_TRUE(same_call(host::from_wire(host::to_wire(grad, region.data()), region.data()), grad));
      ++with_grad;
    }
  }
  EXPECT_GT(with_grad, 10);
}

// The key is the same for equal problems, and for problems that differ only
// in what the oracle does not read.
TEST(ProblemFields, OracleMemoKeyOfEqualProblemsIsEqual) {
  for (const Problem& p : drawn(100)) {
    const Problem copy = p;
    ASSERT_EQ(copy, p);
    EXPECT_EQ(oracle_detail::memo_key(copy), oracle_detail::memo_key(p));
  }
}

}  // namespace
}  // namespace attncheck
