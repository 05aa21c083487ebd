// The gradient laws on a plain backward (tests/support/knobbed_plain_backward.h):
// each holds for the correct one in f32, f64, f16 and bf16 (from the lse and
// normalised afresh), and each catches the backward faults it is written for.
// Problems are drawn by sample_problem within the law's features and given a
// Gaussian dout (NaN in padding rows) when the generator drew none.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>

#include "diagnosis/diagnose.h"
#include "driver/law_run.h"
#include "driver/seed_env.h"
#include "law_framework/grad_support.h"
#include "law_framework/law.h"
#include "knobbed_plain_backward.h"
#include "gen/generators.h"
#include "problem/transforms.h"

namespace attncheck {
namespace {

using testing::BackwardFaults;
using testing::PlainBackward;

// A backward problem within the law's features, the law's required ones used.
Problem draw_backward(const Law& law, uint64_t seed, DType dtype, unsigned families = kClassicFamilies,
                      FeatureBits also_required = 0) {
  GenOptions g;
  g.families = families;
  g.dtypes = {dtype};
  g.features = law.features & kEveryFeature;
  g.required = (law.required | also_required) & g.features & ~kV1Features;
  g.max_q_len = g.max_kv_len = 24;
  g.max_head_dim = g.max_value_dim = 12;
  if (law.tailor) law.tailor(g);
  Problem p = sample_problem(g, seed, 60);
  EXPECT_TRUE(p.is_backward()) << "the generator drew a forward problem for " << law.name;
  return p;
}

// The fault moves some gradient by more than 1% of the largest: on a case
// where it does not (a scale of 1 hides an unscaled dq, zero dout rows hide
// most faults), no law can see it, and the case says nothing of the law.
// A fault with state between calls (dk accumulated) shows on a second call.
bool differs(const Outcome& a, const Outcome& b);
bool fault_shows(Implementation& faulty, const Problem& p) {
  PlainBackward correct;
  const Outcome a = correct.run(p);
  const Outcome first = faulty.run(p), second = faulty.run(p);
  return differs(a, first) || differs(a, second);
}

bool differs(const Outcome& a, const Outcome& b) {
  if (a.status != CallStatus::ok || b.status != CallStatus::ok) return a.status != b.status;
  double largest = 0, moved = 0;
  for (auto [x, y] : {std::pair{&a.dq, &b.dq}, std::pair{&a.dk, &b.dk}, std::pair{&a.dv, &b.dv}})
    for (std::size_t e = 0; e < x->size(); ++e) {
      if (std::isnan((*x)[e]) && std::isnan((*y)[e])) continue;  // padding
      if (std::isnan((*x)[e]) != std::isnan((*y)[e])) return true;
      largest = std::max(largest, std::abs((*x)[e]));
      moved = std::max(moved, std::abs((*x)[e] - (*y)[e]));
    }
  return moved > 1e-2 * largest;
}

struct Tally {
  int pass = 0, fail = 0, other = 0;
  std::string first_failure;
};

// count_invisible false (for a faulty implementation): cases on which the
// fault does not show are not counted.
Tally run_law(const std::string& name, Implementation& impl, DType dtype, int cases, uint64_t seed0 = 1,
              unsigned families = kClassicFamilies, FeatureBits also_required = 0, bool count_invisible = true) {
  const Law* law = find_law(name);
  EXPECT_NE(law, nullptr) << name;
  Tally t;
  if (!law) return t;
  for (int c = 0; c < cases; ++c) {
    const Problem p = draw_backward(*law, seed0 + c, dtype, families, also_required);
    if (!count_invisible && !fault_shows(impl, p)) {
      ++t.other;
      continue;
    }
    const Verdict v = check_case(*law, impl, p);
    if (v.passed()) ++t.pass;
    else if (v.failed()) {
      if (t.first_failure.empty()) t.first_failure = "seed " + std::to_string(seed0 + c) + ": " + v.message + "\n" + p.describe(24);
      ++t.fail;
    } else ++t.other;
  }
  return t;
}

const std::vector<std::string> kGradLaws = {
    "grad_key_shift_zero", "grad_values_sum",   "grad_linear_in_dout",
    "grad_consistent_with_forward", "grad_gqa_sums_group", "grad_empty_rows_zero",
    "grad_deterministic",  "grad_key_permutation_equivariance",
    "grad_query_permutation_equivariance", "grad_layout_invariance",
};

class GradLawOnPlain : public ::testing::TestWithParam<std::tuple<std::string, DType, bool>> {};

TEST_P(GradLawOnPlain, HoldsForACorrectBackward) {
  const auto& [name, dtype, from_lse] = GetParam();
  PlainBackward impl({}, from_lse);
  const char* env = std::getenv("ATTNCHECK_CASES");
  // Seeds from ATTNCHECK_SEED on (1 by default), ATTNCHECK_CASES of them (40).
  const Tally t = run_law(name, impl, dtype, env && *env ? std::atoi(env) : 40, seed_from_env_or(1));
  EXPECT_EQ(t.fail, 0) << name << " failed a correct backward in " << dtype_name(dtype) << ":\n" << t.first_failure;
  EXPECT_GT(t.pass, 0) << name << " judged nothing";
  std::cout << name << " " << dtype_name(dtype) << ": " << t.pass << " passed, " << t.other << " not judged\n";
}

INSTANTIATE_TEST_SUITE_P(
    Laws, GradLawOnPlain,
    ::testing::Combine(::testing::ValuesIn(kGradLaws),
                       ::testing::Values(DType::f32, DType::f64, DType::f16, DType::bf16), ::testing::Bool()),
    [](const auto& info) {
      return std::get<0>(info.param) + "_" + std::string(dtype_name(std::get<1>(info.param))) +
             (std::get<2>(info.param) ? "_from_lse" : "_normalised");
    });

// A law catches a fault: it fails on most of the cases it judges, drawn from
// unit Gaussians (where every fault shows: huge logits make the weights
// one-hot and hide most of them) with the fault's feature.
void expect_caught(const std::string& law, BackwardFaults f, DType dtype, const char* fault,
                   FeatureBits feature = 0) {
  PlainBackward impl(f);
  const Tally t = run_law(law, impl, dtype, 30, 1, kGaussian, feature, false);
  EXPECT_GT(t.fail, 0) << law << " never caught " << fault << " in " << dtype_name(dtype) << " (" << t.pass
                       << " passed, " << t.other << " not judged)";
  EXPECT_GE(t.fail, t.pass) << law << " caught " << fault << " on only " << t.fail << " of " << t.fail + t.pass;
}

TEST(GradLawsCatch, MissingRowsum) {
  BackwardFaults f;
  f.no_rowsum = true;
  for (DType d : {DType::f32, DType::f64}) {
    expect_caught("grad_key_shift_zero", f, d, "dS = P * dP");
    expect_caught("grad_consistent_with_forward", f, d, "dS = P * dP");
  }
}

TEST(GradLawsCatch, UnscaledDq) {
  BackwardFaults f;
  f.dq_unscaled = true;
  expect_caught("grad_consistent_with_forward", f, DType::f32, "dq without the scale");
}

TEST(GradLawsCatch, GqaFirstHead) {
  BackwardFaults f;
  f.gqa_first_head = true;
  for (DType d : {DType::f32, DType::bf16}) {
    expect_caught("grad_gqa_sums_group", f, d, "GQA dK/dV from the first head");
    expect_caught("grad_values_sum", f, d, "GQA dK/dV from the first head", ATTNCHECK_FEATURE_GQA);
  }
}

TEST(GradLawsCatch, UnnormalisedDv) {
  BackwardFaults f;
  f.dv_unnormalised = true;
  for (DType d : {DType::f32, DType::f16}) {
    expect_caught("grad_values_sum", f, d, "dV from unnormalised weights");
    expect_caught("grad_consistent_with_forward", f, d, "dV from unnormalised weights");
  }
}

TEST(GradLawsCatch, NanEmptyRows) {
  BackwardFaults f;
  f.nan_empty_rows = true;
  expect_caught("grad_empty_rows_zero", f, DType::f32, "NaN dq for empty rows");
}

TEST(GradLawsCatch, SoftcapDerivativeDropped) {
  BackwardFaults f;
  f.softcap_derivative_dropped = true;
  const Law* law = find_law("grad_consistent_with_forward");
  ASSERT_NE(law, nullptr);
  PlainBackward impl(f);
  int fail = 0, judged = 0;
  for (int c = 0; c < 30; ++c) {
    Problem p = draw_backward(*law, 100 + c, DType::f32, kGaussian);
    p.softcap = 2.0;  // logits of unit Gaussians reach it: the derivative matters
    const Verdict v = check_case(*law, impl, p);
    judged += v.passed() || v.failed();
    fail += v.failed();
  }
  EXPECT_GT(fail, judged / 2) << "grad_consistent_with_forward caught the dropped soft-cap derivative on " << fail
                              << " of " << judged;
}

TEST(GradLawsCatch, AccumulatedDk) {
  BackwardFaults f;
  f.dk_accumulated = true;
  expect_caught("grad_deterministic", f, DType::f32, "dk += the previous call's");
  expect_caught("grad_linear_in_dout", f, DType::f32, "dk += the previous call's");
}

// A forward problem is judged as the backward problem backward_of makes of
// it: the same dout every time, unit Gaussians in the dtype, NaN in padding.
TEST(GradLaws, ForwardProblemsGetADerivedDout) {
  PlainBackward impl;
  for (const std::string& name : kGradLaws) {
    const Law* law = find_law(name);
    ASSERT_NE(law, nullptr) << name;
    EXPECT_EQ(law->required & kBackwardFeature, kBackwardFeature) << name;
    Problem p = draw_backward(*law, 5, DType::bf16);
    p.dout.clear();
    p.layouts.dout = p.layouts.dq = p.layouts.dk = p.layouts.dv = TensorLayout{};
    const Problem b = backward_of(p), again = backward_of(p);
    ASSERT_TRUE(b.is_backward()) << name;
    EXPECT_EQ(b.inconsistency(), "") << name;
    for (std::size_t k = 0; k < b.dout.size(); ++k) {
      const double x = b.dout[k], y = again.dout[k];
      EXPECT_TRUE(x == y || (std::isnan(x) && std::isnan(y)));
      EXPECT_TRUE(std::isnan(x) || round_to(DType::bf16, x) == x);
    }
    EXPECT_EQ(law->check(impl, p).status, law->check(impl, b).status) << name;
  }
}

}  // namespace
}  // namespace attncheck

namespace attncheck {
namespace {

// The plain backward's forward without its backward: what a forward-only plugin declares.
class ForwardOnly final : public Implementation {
 public:
  std::string name() const override { return "forward_only"; }
  std::string source() const override { return "test:forward_only"; }
  FeatureBits features() const override { return kAllFeatures; }
  Outcome run(const Problem& p) override { return inner_.run(p); }

 private:
  PlainBackward inner_;
};

// The runner skips every gradient law, with the reason, for an implementation
// without backward: never a pass.
TEST(GradLaws, SkippedWithoutBackward) {
  ForwardOnly impl;
  RunOptions o;
  o.cases = 5;
  for (const std::string& name : kGradLaws) {
    const LawReport r = run_law(*find_law(name), impl, o);
    EXPECT_EQ(r.status, LawStatus::skipped) << name;
    EXPECT_EQ(r.skip_reason, SkipReason::not_applicable) << name;
    EXPECT_NE(r.message.find("backward"), std::string::npos) << name << ": " << r.message;
    EXPECT_EQ(r.judged, 0) << name;
  }
}

}  // namespace
}  // namespace attncheck

namespace attncheck {
namespace {

// Each backward fault is diagnosed as itself on a case of unit Gaussians that
// shows it; a correct backward gets no diagnosis.
TEST(GradDiagnosis, NamesEachFault) {
  struct Case {
    BackwardFaults f;
    const char* law;
    const char* expect;
    FeatureBits feature;
  };
  std::vector<Case> cases(6);
  cases[0].f.no_rowsum = true, cases[0].law = "grad_key_shift_zero", cases[0].expect = "rowsum";
  cases[1].f.dq_unscaled = true, cases[1].law = "grad_consistent_with_forward", cases[1].expect = "scale";
  cases[2].f.gqa_first_head = true, cases[2].law = "grad_gqa_sums_group", cases[2].expect = "first query head";
  cases[3].f.dv_unnormalised = true, cases[3].law = "grad_values_sum", cases[3].expect = "unnormalised";
  cases[4].f.nan_empty_rows = true, cases[4].law = "grad_empty_rows_zero", cases[4].expect = "NaN";
  cases[5].f.softcap_derivative_dropped = true, cases[5].law = "grad_consistent_with_forward",
  cases[5].expect = "soft-cap", cases[5].feature = ATTNCHECK_FEATURE_SOFTCAP;
  for (const Case& c : cases) {
    PlainBackward impl(c.f);
    int diagnosed = 0, failed = 0;
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      Problem p = draw_backward(*find_law(c.law), seed, DType::f64, kGaussian, c.feature);
      if (c.f.nan_empty_rows) p = with_mask_anded(p, [](int64_t, int64_t i, int64_t) { return i % 3 != 0; });
      if (c.feature == ATTNCHECK_FEATURE_SOFTCAP) p.softcap = 2.0;
      if (!check_case(*find_law(c.law), impl, p).failed()) continue;
      ++failed;
      const std::string d = diagnose(impl, p);
      diagnosed += d.find(c.expect) != std::string::npos;
    }
    EXPECT_GT(failed, 0) << c.law << " caught nothing for " << c.expect;
    EXPECT_GE(diagnosed * 10, failed * 8) << c.expect << ": diagnosed " << diagnosed << " of " << failed;
  }
  // A fault with state: diagnosed on most problems where a second call shows it.
  BackwardFaults acc;
  acc.dk_accumulated = true;
  int acc_shown = 0, acc_named = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const Problem p = draw_backward(*find_law("grad_deterministic"), seed, DType::f32, kGaussian);
    PlainBackward accumulating(acc);
    if (!fault_shows(accumulating, p)) continue;
    ++acc_shown;
    PlainBackward fresh(acc);
    const std::string d = diagnose(fresh, p);
    acc_named += d.find("accumulates dk") != std::string::npos;
  }
  EXPECT_GT(acc_shown, 5);
  EXPECT_GE(acc_named * 10, acc_shown * 8) << "diagnosed " << acc_named << " of " << acc_shown;
  PlainBackward correct;
  for (uint64_t seed = 1; seed <= 10; ++seed)
    EXPECT_EQ(diagnose(correct, draw_backward(*find_law("grad_linear_in_dout"), seed, DType::f32, kGaussian)), "");
}

}  // namespace
}  // namespace attncheck
