// The backward zoo: each member is reference's forward and reference's
// backward with exactly one fault (impls/reference_backward.h). For each, a
// problem that exposes the fault shows a gradient far from reference's, and
// a problem (or a gradient) that does not involve it shows agreement to the
// last bits: the fault is there and nowhere else. Called directly on calls
// built by hand (hand_built_grad_call.h), in f64 unless said otherwise.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "impls/builtins.h"
#include "impls/kernels.h"
#include "problem/problem.h"
#include "hand_built_grad_call.h"

namespace attncheck {
namespace {

using namespace testing_v2;

constexpr double kAgree = 1e-12;  // f64, the same arithmetic but for the fault
constexpr double kDiffer = 1e-3;  // every fault below changes some gradient by far more

CallSpec small(DType dtype = DType::f64) {
  CallSpec s;
  s.dtype = dtype;
  s.batch = 2, s.heads = 4, s.kv_heads = 4, s.q_len = 6, s.kv_len = 9, s.head_dim = 4, s.value_dim = 3;
  return s;
}

// Largest |a - b| over live elements (NaN on one side only: infinity).
double gap(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double g = 0;
  for (std::size_t n = 0; n < a.size(); ++n) {
    if (std::isnan(a[n]) || std::isnan(b[n])) {
      if (std::isnan(a[n]) != std::isnan(b[n])) return INFINITY;
      continue;
    }
    g = std::max(g, std::abs(a[n] - b[n]));
  }
  return g;
}

struct Gaps {
  double dq = 0, dk = 0, dv = 0;
  double max() const { return std::max({dq, dk, dv}); }
};

// Gradients of the member and of reference on one built call.
Gaps gaps(const std::string& member, GradCall& t, const double* garbage = nullptr) {
  const BuiltinInfo* info = find_builtin(member);
  EXPECT_NE(info, nullptr) << member;
  if (!info) return {INFINITY, INFINITY, INFINITY};
  const Grads want = run_forward_backward(t, reference_forward_v2, reference_backward_v2, garbage);
  const Grads got = run_forward_backward(t, info->forward_v2, info->backward_v2, garbage);
  EXPECT_EQ(want.problems, "");
  EXPECT_EQ(got.problems, "") << member;
  return {gap(got.dq, want.dq), gap(got.dk, want.dk), gap(got.dv, want.dv)};
}

Gaps gaps(const std::string& member, const CallSpec& s, const double* garbage = nullptr) {
  std::mt19937_64 rng(20261201);
  GradCall t = make_grad_call(s, {}, rng);
  return gaps(member, t, garbage);
}

// The backward zoo as the rows say: the zoo members with a backward of their own.
std::vector<std::string> backward_members() {
  std::vector<std::string> names;
  for (const BuiltinInfo& b : builtins())
    if (b.kind == BuiltinKind::zoo && b.backward_v2) names.emplace_back(b.name);
  return names;
}

TEST(BackwardZoo, EveryMemberIsReferenceForwardWithABackward) {
  ASSERT_GE(backward_members().size(), 8u);
  for (const std::string& name : backward_members()) {
    const BuiltinInfo* b = find_builtin(name);
    ASSERT_NE(b, nullptr) << name;
    EXPECT_EQ(b->features, kAllFeatures) << name;
    EXPECT_EQ(b->forward_v2, &reference_forward_v2) << name;
    EXPECT_NE(b->backward_v2, nullptr) << name;
    EXPECT_FALSE(b->description.empty()) << name;
  }
  for (const char* name : {"reference", "naive", "online"}) EXPECT_NE(find_builtin(name)->backward_v2, nullptr) << name;
}

TEST(BackwardZoo, NoRowsum) {
  const Gaps g = gaps("grad_no_rowsum", small());
  EXPECT_GT(g.dq, kDiffer);
  EXPECT_GT(g.dk, kDiffer);
  EXPECT_LT(g.dv, kAgree);  // dV = P^T dO does not use dS
  // v = 0: dP = 0 and D = 0, so the missing term is 0.
  std::mt19937_64 rng(7);
  GradCall t = make_grad_call(small(), {}, rng);
  bool exact = true;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t g2 = 0; g2 < 4; ++g2)
      for (int64_t j = 0; j < 9; ++j)
        for (int64_t c = 0; c < 3; ++c) v2test::encode(ATTNCHECK_F64, 0.0, t.fwd.enc.v.at(b, g2, j, c), exact);
  EXPECT_LT(gaps("grad_no_rowsum", t).max(), kAgree);
}

TEST(BackwardZoo, DqUnscaled) {
  const Gaps g = gaps("grad_dq_unscaled", small());  // default scale 1/2
  EXPECT_GT(g.dq, kDiffer);
  EXPECT_LT(std::max(g.dk, g.dv), kAgree);
  CallSpec s = small();
  s.scale = 1.0;
  EXPECT_LT(gaps("grad_dq_unscaled", s).max(), kAgree);
}

TEST(BackwardZoo, GqaFirstHead) {
  CallSpec s = small();
  s.kv_heads = 2;
  const Gaps g = gaps("grad_gqa_first_head", s);
  EXPECT_GT(std::min(g.dk, g.dv), kDiffer);
  EXPECT_LT(g.dq, kAgree);
  EXPECT_LT(gaps("grad_gqa_first_head", small()).max(), kAgree);  // no grouping
}

TEST(BackwardZoo, DvUnnormalised) {
  const Gaps g = gaps("grad_dv_unnormalised", small());
  EXPECT_GT(g.dv, kDiffer);
  EXPECT_LT(std::max(g.dq, g.dk), kAgree);
  // Row i sees key i alone (top-left causal, window 0 on the left): its one weight is 1 either way.
  CallSpec s = small();
  s.causal = ATTNCHECK_CAUSAL_TOP_LEFT, s.window_left = 0;
  EXPECT_LT(gaps("grad_dv_unnormalised", s).max(), kAgree);
}

TEST(BackwardZoo, NanEmptyRows) {
  CallSpec s = small();
  s.mask = true;  // row 1 of head 3 of batch 0 sees no key
  EXPECT_EQ(gaps("grad_nan_empty_rows", s).dq, INFINITY);
  s.mask = false;
  s.kv_lens = {9, 0};  // batch 1 has no keys
  EXPECT_EQ(gaps("grad_nan_empty_rows", s).dq, INFINITY);
  EXPECT_LT(gaps("grad_nan_empty_rows", small()).max(), kAgree);
}

TEST(BackwardZoo, SoftcapDerivativeDropped) {
  CallSpec s = small();
  s.scale = 1.5, s.softcap = 0.7;
  const Gaps g = gaps("grad_softcap_derivative_dropped", s);
  EXPECT_GT(std::min(g.dq, g.dk), kDiffer);
  EXPECT_LT(g.dv, kAgree);
  EXPECT_LT(gaps("grad_softcap_derivative_dropped", small()).max(), kAgree);  // no soft-cap
}

// The race in dk's reduction order: two identical calls give dk's that differ
// in the last bits (somewhere), each within f64 rounding of reference's, and dq
// and dv that repeat every bit; a fresh instance starts the same sequence again.
TEST(BackwardZoo, DkRaceOrder) {
  const BuiltinInfo* info = find_builtin("grad_dk_race_order");
  ASSERT_NE(info, nullptr);
  ASSERT_NE(info->reset, nullptr);
  std::mt19937_64 rng(20261201);
  GradCall t = make_grad_call(small(), {}, rng);
  const Grads want = run_forward_backward(t, reference_forward_v2, reference_backward_v2);
  info->reset();
  const Grads first = run_forward_backward(t, info->forward_v2, info->backward_v2);
  const Grads second = run_forward_backward(t, info->forward_v2, info->backward_v2);
  EXPECT_NE(first.dk, second.dk) << "two identical calls gave the same dk bits";
  EXPECT_EQ(first.dq, second.dq);
  EXPECT_EQ(first.dv, second.dv);
  EXPECT_LT(gap(first.dk, want.dk), kAgree);
  EXPECT_LT(gap(second.dk, want.dk), kAgree);
  info->reset();
  EXPECT_EQ(run_forward_backward(t, info->forward_v2, info->backward_v2).dk, first.dk);
}

TEST(BackwardZoo, DkAccumulated) {
  const double garbage = 3.0, zero = 0.0;
  for (const DType dtype : {DType::f64, DType::f16}) {  // the widened path starts from the buffer too
    const Gaps g = gaps("grad_dk_accumulated", small(dtype), &garbage);
    EXPECT_GT(g.dk, 1.0) << dtype_name(dtype);
    EXPECT_LT(std::max(g.dq, g.dv), kAgree) << dtype_name(dtype);
    EXPECT_LT(gaps("grad_dk_accumulated", small(dtype), &zero).max(), kAgree) << dtype_name(dtype);
  }
  EXPECT_EQ(gaps("grad_dk_accumulated", small()).dk, INFINITY);  // onto the NaN poison
}

// The check the references pass (backward_kernels_test.cpp) is one a faulty
// backward fails: every member, on the problem that exposes its fault, is
// off from central differences of the spec's forward by far more than f64
// rounding, as reference is not.
TEST(BackwardZoo, CentralDifferencesCatchEveryMember) {
  const double garbage = 3.0;
  struct Exposing { const char* member; CallSpec spec; bool prefill; };
  CallSpec gqa = small(), softcap = small(), blind = small();
  gqa.kv_heads = 2;
  softcap.scale = 1.5, softcap.softcap = 0.7;
  blind.kv_lens = {9, 0};
  const Exposing cases[] = {{"grad_no_rowsum", small(), false}, {"grad_dq_unscaled", small(), false},
                            {"grad_gqa_first_head", gqa, false}, {"grad_dv_unnormalised", small(), false},
                            {"grad_nan_empty_rows", blind, false}, {"grad_softcap_derivative_dropped", softcap, false},
                            {"grad_dk_accumulated", small(), true}};
  // Every member the rows list is here, but the two as accurate as reference
  // (their reduction order varies, not their value: DkRaceOrder above, and
  // DkOrderByAlignment in tests/core/promise_laws_test.cpp).
  for (const std::string& name : backward_members()) {
    if (name == "grad_dk_race_order" || name == "grad_dk_order_by_alignment") continue;
    EXPECT_TRUE(std::any_of(std::begin(cases), std::end(cases), [&](const Exposing& e) { return e.member == name; }))
        << name << " has no exposing problem here";
  }
  for (const Exposing& e : cases) {
    std::mt19937_64 rng(11);
    GradCall t = make_grad_call(e.spec, {}, rng);
    const Grads fd = central_differences(t);
    const Grads want = run_forward_backward(t, reference_forward_v2, reference_backward_v2, e.prefill ? &garbage : nullptr);
    const BuiltinInfo* info = find_builtin(e.member);
    ASSERT_NE(info, nullptr) << e.member;
    const Grads got = run_forward_backward(t, info->forward_v2, info->backward_v2, e.prefill ? &garbage : nullptr);
    const double ref_gap = std::max({gap(want.dq, fd.dq), gap(want.dk, fd.dk), gap(want.dv, fd.dv)});
    const double member_gap = std::max({gap(got.dq, fd.dq), gap(got.dk, fd.dk), gap(got.dv, fd.dv)});
    EXPECT_LT(ref_gap, 1e-7) << e.member;
    EXPECT_GT(member_gap, kDiffer) << e.member;
  }
}

}  // namespace
}  // namespace attncheck
