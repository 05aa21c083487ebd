// A law that builds its own problem fails on that problem, not on the case it
// drew: masked_keys_ignored hides keys, the weight laws set V = identity (or
// read it in blocks), the comparison laws change one feature. The result
// carries the failing calls with their derivations, and the saved case file
// holds the call that failed (docs/case-files.md, "A derived call"): loaded
// back and checked under its law, it fails with the same message.
#include <gtest/gtest.h>

#include "casefile/case_file.h"
#include "driver/law_run.h"
#include "gen/profiles.h"
#include "impls/builtins.h"
#include "impls/in_process.h"
#include "law_framework/law.h"
#include "law_framework/law_calls.h"
#include "run/failure_case.h"

namespace attncheck {
namespace {

// Runs `law` on the built-in `impl` from seed 1; the failure's record goes
// through a case file's text and back, as --save-failures and replay take it.
struct Found {
  LawReport report;
  CaseRecord saved;
};

Found found(const std::string& law, Implementation& impl, std::string_view profile = {}) {
  RunOptions o;
  o.seed = 1;
  o.shrink_seconds = 5;
  // A member whose fault shows only at a profile's shapes (split-KV past 2,048 keys: the
  // default profile's long rows) is drawn there, as its row says and the zoo test does.
  if (!profile.empty()) {
    const Profile* named = find_profile(profile);
    EXPECT_NE(named, nullptr) << "no profile " << profile;
    if (named) o.gen = named->options();
  }
  Found f;
  f.report = run_law(*find_law(law), impl, o);
  EXPECT_EQ(f.report.status, LawStatus::fail) << law << " on " << impl.name() << ": " << f.report.message;
  if (!f.report.counterexample) return f;
  const CaseRecord rec = law_failure_record(f.report, impl.name(), impl.source(), "rapidcheck", 1);
  f.saved = case_from_json(case_to_json(rec), "saved case");
  return f;
}

// The saved call, checked as a case under its law, fails the same way.
void expect_replay_fails_alike(const Found& f, Implementation& impl) {
  const Verdict again = check_case(*find_law(f.report.law), impl, f.saved.problem);
  EXPECT_TRUE(again.failed()) << again.message;
  EXPECT_EQ(again.message, f.report.message);
}

bool identity_values(const Problem& p) {
  const Shape& s = p.shape;
  for (int64_t kv = 0; kv < s.batch * s.kv_head_count(); ++kv)
    for (int64_t j = 0; j < s.kv_len; ++j)
      for (int64_t c = 0; c < s.value_dim; ++c)
        if (p.v[p.v_at(kv, j, c)] != (c == j ? 1.0 : 0.0)) return false;
  return true;
}

TEST(DerivedCase, MaskedKeysIgnoredSavesTheMaskedCall) {
  auto impl = make_builtin("causal_off_by_one");
  const Found f = found("masked_keys_ignored", *impl);
  ASSERT_TRUE(f.report.counterexample);
  // The failure was seen on the masked call and its huge-keys companion, not on the drawn case.
  ASSERT_EQ(f.report.failing_calls.size(), 2u);
  EXPECT_NE(f.report.failing_calls[0].derivation.find("hidden from every row"), std::string::npos)
      << f.report.failing_calls[0].derivation;
  // What is saved is that masked call (the drawn case had no mask), with how it was built.
  EXPECT_FALSE(f.report.counterexample->has_mask());
  EXPECT_TRUE(f.saved.problem.has_mask());
  EXPECT_EQ(f.saved.problem, f.report.failing_calls[0].problem);
  EXPECT_NE(f.saved.derivation.find("the shrunk case was"), std::string::npos) << f.saved.derivation;
  expect_replay_fails_alike(f, *impl);
}

TEST(DerivedCase, WeightLawsSaveTheIdentityCall) {
  for (const auto& [member, law] : {std::pair{"causal_off_by_one", "masked_weights_zero"},
                                    std::pair{"kv_swapped", "weights_sum_to_one"},
                                    std::pair{"seed_softmax_bypass", "weights_in_unit_interval"}}) {
    SCOPED_TRACE(std::string(law) + " on " + member);
    auto impl = make_builtin(member);
    const Found f = found(law, *impl);
    ASSERT_TRUE(f.report.counterexample);
    ASSERT_EQ(f.report.failing_calls.size(), 1u);
    const Problem& saved = f.saved.problem;
    EXPECT_EQ(saved.shape.value_dim, saved.shape.kv_len);
    EXPECT_TRUE(identity_values(saved));
    EXPECT_NE(f.saved.derivation.find("identity"), std::string::npos) << f.saved.derivation;
    expect_replay_fails_alike(f, *impl);
  }
}

// An implementation that takes no value_dim above 1: the weight laws read V =
// identity in blocks of the drawn value_dim, and the saved call is the first block.
class NarrowValues final : public Implementation {
 public:
  explicit NarrowValues(std::unique_ptr<Implementation> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  std::string source() const override { return inner_->source(); }
  FeatureBits features() const override { return inner_->features(); }
  Outcome run(const Problem& p) override {
    if (p.shape.value_dim > 1) {
      Outcome o;
      o.status = CallStatus::unsupported;
      o.message = "value_dim above 1";
      return o;
    }
    return inner_->run(p);
  }

 private:
  std::unique_ptr<Implementation> inner_;
};

TEST(DerivedCase, WeightsReadInBlocksSaveTheFirstBlock) {
  NarrowValues impl(make_builtin("causal_off_by_one"));
  const Found f = found("masked_weights_zero", impl);
  ASSERT_TRUE(f.report.counterexample);
  ASSERT_EQ(f.report.failing_calls.size(), 1u);
  const Problem& saved = f.saved.problem;
  EXPECT_EQ(saved.shape.value_dim, 1);
  EXPECT_GT(saved.shape.kv_len, saved.shape.value_dim);
  EXPECT_NE(f.saved.derivation.find("blocks"), std::string::npos) << f.saved.derivation;
  expect_replay_fails_alike(f, impl);
}

// A comparison of two calls names both; when one is the drawn case, the case
// itself is saved (a replay of it makes the other again).
TEST(DerivedCase, ComparisonLawsNameBothCalls) {
  for (const auto& [member, law] : {std::pair{"gqa_kv_modulo", "gqa_equals_repeated_kv"},
                                    std::pair{"window_off_by_one", "window_equals_mask"},
                                    std::pair{"strides_ignored", "layout_invariance"}}) {
    SCOPED_TRACE(std::string(law) + " on " + member);
    auto impl = make_builtin(member);
    const Found f = found(law, *impl);
    ASSERT_TRUE(f.report.counterexample);
    ASSERT_EQ(f.report.failing_calls.size(), 2u);
    bool one_is_the_case = false;
    for (const LawCall& c : f.report.failing_calls) {
      EXPECT_FALSE(c.derivation.empty()) << c.role;
      one_is_the_case = one_is_the_case || c.derivation == "the case itself";
    }
    EXPECT_TRUE(one_is_the_case);
    EXPECT_EQ(f.saved.problem, *f.report.counterexample);
    EXPECT_TRUE(f.saved.derivation.empty());
    expect_replay_fails_alike(f, *impl);
  }
}

// Every zoo member's pinned laws: the saved call, replayed under its law,
// fails with the message the run printed; where the failure was seen on calls
// the law built, none of them the case, the saved call is the first of them
// (a derived call), else the case itself.
TEST(DerivedCase, EveryPinnedFailureReplaysFromItsSavedCall) {
  int derived = 0;
  for (const BuiltinInfo& b : builtins()) {
    for (std::string_view law : b.pinned_laws) {
      SCOPED_TRACE(std::string(law) + " on " + std::string(b.name));
      auto impl = make_builtin(b.name);
      const Found f = found(std::string(law), *impl, b.profile);
      if (!f.report.counterexample) continue;
      const LawCall* saved = call_to_save(*f.report.counterexample, f.report.failing_calls);
      EXPECT_EQ(f.saved.problem, saved ? saved->problem : *f.report.counterexample);
      EXPECT_EQ(f.saved.derivation.empty(), saved == nullptr) << f.saved.derivation;
      derived += saved != nullptr;
      expect_replay_fails_alike(f, *impl);
    }
  }
  EXPECT_GE(derived, 5);  // masked_keys_ignored, the weight laws, ... (a count, so the loop cannot pass empty)
}

// An implementation that crashes on value_dim above 1: cases drawn with
// value_dim = head_dim = 1 run, the weight laws' V = identity call crashes.
class CrashesOnWideValues final : public Implementation {
 public:
  std::string name() const override { return "crashes_on_wide_values"; }
  std::string source() const override { return "builtin:reference"; }
  Outcome run(const Problem& p) override {
    if (p.shape.value_dim > 1) {
      Outcome o;
      o.status = CallStatus::crash;
      o.message = "killed by SIGSEGV";
      return o;
    }
    return inner_->run(p);
  }

 private:
  std::unique_ptr<Implementation> inner_ = make_builtin("reference");
};

// A process fault's case is the call that faulted, so no_crash replayed on it crashes again.
TEST(DerivedCase, AFaultsCaseIsTheCallThatFaulted) {
  CrashesOnWideValues impl;
  RunOptions o;
  o.seed = 1;
  o.gen.head_dims = {1};
  o.gen.same_dims = true;
  const LawReport r = run_law(*find_law("weights_sum_to_one"), impl, o);
  ASSERT_TRUE(r.fault_case) << r.message;
  EXPECT_EQ(r.fault_status, CallStatus::crash);
  EXPECT_EQ(r.fault_case->shape.value_dim, r.fault_case->shape.kv_len);
  EXPECT_EQ(check_case(*find_law("no_crash"), impl, *r.fault_case).status, VerdictStatus::fail);
}

TEST(DerivedCase, ChangesAreNamedByField) {
  Problem a;
  a.shape = Shape{1, 1, 2, 3, 1, 1};
  a.q.assign(a.shape.q_size(), 0.5);
  a.k.assign(a.shape.k_size(), 0.5);
  a.v.assign(a.shape.v_size(), 0.5);
  Problem b = a;
  b.k[1] = 2;
  b.mask.assign(b.shape.mask_size(), 1);
  EXPECT_EQ(changes_from(a, a), "");
  EXPECT_EQ(changes_from(a, b), "k (1 of 3 elements), mask (6 elements, were 0)");
}

}  // namespace
}  // namespace attncheck
