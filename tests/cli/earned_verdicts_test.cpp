// Every verdict earned (issue #30), below the command line: run_law's
// statuses for a law that judged too few cases for each reason, the rules
// finish_implementation adds over the laws (a declared feature refused on
// every call fails; an expected failure does not pass an implementation that
// completed no call), RunBudget's bound, and NaN in lengths_equal_slices.
// The implementations are the reference built-in behind a wrapper that
// refuses, faults or spoils what the test needs.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <thread>

#include "run/check_implementation.h"
#include "run/law_result_wire.h"
#include "run/run_budget.h"
#include "impls/in_process.h"
#include "law_framework/process_law.h"
#include "law_framework/law.h"

namespace attncheck {
namespace {

// The reference, except where `hook` answers for it (before the call), or
// `spoil` changes its answer (after the call); `declared` replaces its features.
class Wrapped final : public Implementation {
 public:
  std::function<std::optional<Outcome>(const Problem&)> hook;
  std::function<void(const Problem&, Outcome&)> spoil;
  std::optional<FeatureBits> declared;
  std::optional<uint32_t> formats;  // replaces its kv_formats

  std::string name() const override { return "wrapped"; }
  std::string source() const override { return "builtin:wrapped"; }
  FeatureBits features() const override { return declared ? *declared : inner_->features(); }
  uint32_t kv_formats() const override { return formats ? *formats : inner_->kv_formats(); }
  Outcome run(const Problem& p) override {
    // As the plugin host and the built-ins do: a feature not declared is not sent.
    if (std::string why = undeclared_features(p, features(), kv_formats()); !why.empty())
      return {CallStatus::unsupported, {}, why};
    if (hook)
      if (std::optional<Outcome> o = hook(p)) return *o;
    Outcome o = inner_->run(p);
    if (spoil && o.status == CallStatus::ok) spoil(p, o);
    return o;
  }

 private:
  std::unique_ptr<Implementation> inner_ = make_builtin("reference");
};

Outcome refused(std::string why) { return {CallStatus::unsupported, {}, std::move(why)}; }
Outcome crashed() { return {CallStatus::crash, {}, "killed by SIGABRT (Aborted)"}; }

RunOptions options(int cases = 20, int min_judged = 0) {
  RunOptions o;
  o.seed = 20261130;
  o.cases = cases;
  o.min_judged = min_judged;
  return o;
}

const Law& law(const char* name) {
  const Law* l = find_law(name);
  EXPECT_NE(l, nullptr) << name;
  return *l;
}

// ---- run_law: too few judged cases, for each reason --------------------------

TEST(EarnedVerdicts, EveryCallRefusedIsInsufficientNotSkipped) {
  Wrapped impl;
  impl.hook = [](const Problem&) { return refused("this build offers nothing"); };
  const LawReport r = run_law(law("matches_oracle"), impl, options());
  EXPECT_EQ(r.status, LawStatus::insufficient) << r.message;
  EXPECT_EQ(r.judged, 0);
  EXPECT_NE(r.message.find("answered UNSUPPORTED"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("this build offers nothing"), std::string::npos) << r.message;
}

TEST(EarnedVerdicts, EveryCallFaultingIsInsufficientEvenWithNoFloor) {
  Wrapped impl;
  impl.hook = [](const Problem&) { return crashed(); };
  const LawReport r = run_law(law("weights_sum_to_one"), impl, options(20, 0));
  EXPECT_EQ(r.status, LawStatus::insufficient) << r.message;
  EXPECT_EQ(r.judged, 0);
  EXPECT_NE(r.message.find("process fault"), std::string::npos) << r.message;
  EXPECT_TRUE(r.fault_case);
}

TEST(EarnedVerdicts, AV1ImplementationRefusingMasksIsSkipped) {
  // It cannot declare masks: refusing them is "cannot apply", as an undeclared v2 feature is.
  Wrapped impl;
  impl.declared = kV1Features;
  impl.hook = [](const Problem& p) -> std::optional<Outcome> {
    if (p.has_mask() || p.causal != Causal::none) return refused("no masks, no causal rules");
    return std::nullopt;
  };
  const LawReport r = run_law(law("masked_keys_ignored"), impl, options());
  EXPECT_EQ(r.status, LawStatus::skipped) << r.message;
  EXPECT_EQ(r.skip_reason, SkipReason::unsupported);
  // The same refusals from a v2 implementation that declares masks are refusals.
  Wrapped v2;
  v2.declared = kAllFeatures;
  v2.hook = impl.hook;
  EXPECT_EQ(run_law(law("masked_keys_ignored"), v2, options()).status, LawStatus::insufficient);
}

TEST(EarnedVerdicts, ALawWhoseOwnCallsNeedAnUndeclaredFeatureIsSkipped) {
  // masked_keys_ignored masks keys itself: to a v2 implementation without MASK
  // that call is never sent, and the law cannot apply (as if it required MASK).
  Wrapped impl;
  impl.declared = ATTNCHECK_FEATURE_GQA;
  const LawReport r = run_law(law("masked_keys_ignored"), impl, options());
  EXPECT_EQ(r.status, LawStatus::skipped) << r.message;
  EXPECT_EQ(r.skip_reason, SkipReason::not_applicable);
  EXPECT_NE(r.message.find("does not declare"), std::string::npos) << r.message;
}

TEST(EarnedVerdicts, AStoppedLawIsInsufficientWithTheReason) {
  Wrapped impl;
  int calls = 0;
  impl.hook = [&](const Problem&) -> std::optional<Outcome> {
    ++calls;
    return std::nullopt;
  };
  RunOptions o = options(40, 20);
  o.stop_reason = [&] { return calls >= 5 ? std::string("not run: the --budget of 2 s was spent") : std::string(); };
  const LawReport r = run_law(law("matches_oracle"), impl, o);
  EXPECT_EQ(r.status, LawStatus::insufficient) << r.message;
  EXPECT_EQ(r.judged, 5);
  EXPECT_NE(r.message.find("--budget of 2 s was spent"), std::string::npos) << r.message;
  // Stopped before the first case, with no floor: still not a pass, nor a skip.
  o = options(40, 0);
  o.stop_reason = [] { return std::string("not run: the --budget of 2 s was spent"); };
  const LawReport none = run_law(law("matches_oracle"), impl, o);
  EXPECT_EQ(none.status, LawStatus::insufficient) << none.message;
  EXPECT_EQ(none.message, "not run: the --budget of 2 s was spent");
}

TEST(EarnedVerdicts, ARefusalOnceTheRunStoppedIsTheStop) {
  // The budget's own "unsupported" after its deadline is not the implementation's refusal.
  Wrapped impl;
  bool spent = false;
  int calls = 0;
  impl.hook = [&](const Problem&) -> std::optional<Outcome> {
    if (++calls > 3) spent = true;
    if (spent) return refused("not called: the --budget of the run is spent");
    return std::nullopt;
  };
  RunOptions o = options(40, 20);
  o.stop_reason = [&] { return spent ? std::string("not run: the --budget of 1 s was spent") : std::string(); };
  const LawReport r = run_law(law("matches_oracle"), impl, o);
  EXPECT_EQ(r.status, LawStatus::insufficient) << r.message;
  EXPECT_EQ(r.message.find("UNSUPPORTED"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("--budget of 1 s was spent"), std::string::npos) << r.message;
  EXPECT_EQ(r.refused_features, 0u);
}

TEST(EarnedVerdicts, ProcessLawsJudgeOnlyCallsThatCompletedWhatTheyJudge) {
  // Every call returns an error code: it came back (no_crash judges it), but it
  // wrote nothing whose bounds or poison writes_every_output could inspect.
  Wrapped impl;
  impl.hook = [](const Problem&) { return Outcome{CallStatus::error, {}, "forward returned 7"}; };
  const LawReport crash = run_law(law("no_crash"), impl, options());
  EXPECT_EQ(crash.status, LawStatus::pass) << crash.message;
  EXPECT_EQ(crash.judged, 20);
  const LawReport written = run_law(law("writes_every_output"), impl, options());
  EXPECT_EQ(written.status, LawStatus::insufficient) << written.message;
  EXPECT_EQ(written.judged, 0);
  EXPECT_NE(written.message.find("forward returned 7"), std::string::npos) << written.message;
}

TEST(EarnedVerdicts, AProcessLawDoesNotPassOnForwardCallsWhenEveryBackwardFaulted) {
  Wrapped impl;  // the reference declares a backward
  ASSERT_TRUE(impl.features() & kBackwardFeature);
  impl.hook = [](const Problem& p) -> std::optional<Outcome> {
    if (p.is_backward()) return Outcome{CallStatus::crash, {}, "killed by SIGSEGV during backward"};
    return std::nullopt;
  };
  const LawReport r = run_law(law("no_timeout"), impl, options(30, 20));
  EXPECT_EQ(r.status, LawStatus::insufficient) << r.message;
  EXPECT_NE(r.message.find("backward"), std::string::npos) << r.message;
  // And they do judge backward calls of an implementation whose backward is sound.
  Wrapped sound;
  const LawReport s = run_law(law("no_timeout"), sound, options(30, 20));
  EXPECT_EQ(s.status, LawStatus::pass) << s.message;
  EXPECT_TRUE(s.features & kBackwardFeature) << feature_list(s.features);
}

// ---- finish_implementation: over the laws ------------------------------------

// The test's own instance as a Target's: calls go to it, it stays the test's.
class Borrowed final : public Implementation {
 public:
  explicit Borrowed(Implementation& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  std::string source() const override { return inner_.source(); }
  FeatureBits features() const override { return inner_.features(); }
  uint32_t kv_formats() const override { return inner_.kv_formats(); }
  Outcome run(const Problem& p) override { return inner_.run(p); }

 private:
  Implementation& inner_;
};

ImplementationResult check(Implementation& impl, const std::vector<const char*>& names, RunSettings s = {}) {
  s.options.seed = 7;
  s.options.cases = 30;
  s.options.min_judged = 20;
  std::vector<const Law*> laws;
  for (const char* n : names) laws.push_back(&law(n));
  std::vector<std::string> errors;
  Target target{.name = impl.name(), .source = impl.source(), .loaded = std::make_unique<Borrowed>(impl)};
  ImplementationResult r = check_implementation(target, laws, s, errors);
  EXPECT_TRUE(errors.empty());
  return r;
}

const LawResult& result(const ImplementationResult& r, const std::string& name) {
  for (const LawResult& l : r.laws)
    if (l.run.law == name) return l;
  ADD_FAILURE() << "no " << name;
  return r.laws.front();
}

TEST(EarnedVerdicts, ADeclaredFeatureRefusedOnEveryCallFails) {
  Wrapped impl;
  impl.declared = kV1Features | ATTNCHECK_FEATURE_SOFTCAP;
  impl.hook = [](const Problem& p) -> std::optional<Outcome> {
    if (p.softcap > 0) return refused("soft-capping is not implemented");
    return std::nullopt;
  };
  const ImplementationResult r = check(impl, {"matches_oracle", "softcap_bounds_weights"});
  const LawResult& about = result(r, "softcap_bounds_weights");
  EXPECT_EQ(about.run.status, LawStatus::fail) << about.run.message;
  EXPECT_NE(about.run.message.find("declares softcap"), std::string::npos) << about.run.message;
  EXPECT_TRUE(r.failed());
  // A law about something else that drew the feature as well keeps its own verdict.
  EXPECT_EQ(result(r, "matches_oracle").run.status, LawStatus::pass) << result(r, "matches_oracle").run.message;
}

TEST(EarnedVerdicts, ADeclaredFeatureWithoutItsOwnLawFailsTheLawThatDrewIt) {
  Wrapped impl;
  impl.declared = kV1Features | ATTNCHECK_FEATURE_SOFTCAP;
  impl.hook = [](const Problem& p) -> std::optional<Outcome> {
    if (p.softcap > 0) return refused("soft-capping is not implemented");
    return std::nullopt;
  };
  const ImplementationResult r = check(impl, {"matches_oracle"});
  EXPECT_EQ(result(r, "matches_oracle").run.status, LawStatus::fail);
  EXPECT_NE(result(r, "matches_oracle").run.message.find("softcap"), std::string::npos);
}

TEST(EarnedVerdicts, AFinerLimitOnADeclaredFeatureIsNoFailure) {
  // Soft-capping served, except with the largest head dims: the contract's
  // "finer limit", which only leaves those cases unjudged.
  Wrapped impl;
  impl.declared = kV1Features | ATTNCHECK_FEATURE_SOFTCAP;
  impl.hook = [](const Problem& p) -> std::optional<Outcome> {
    if (p.softcap > 0 && p.shape.head_dim > 16) return refused("soft-capping up to head_dim 16");
    return std::nullopt;
  };
  const ImplementationResult r = check(impl, {"matches_oracle", "softcap_bounds_weights"});
  for (const LawResult& l : r.laws) EXPECT_NE(l.run.status, LawStatus::fail) << l.run.law << ": " << l.run.message;
}

TEST(EarnedVerdicts, AnExpectedFailureDoesNotPassAnImplementationThatCompletedNoCall) {
  Wrapped impl;
  impl.declared = kV1Features;
  impl.hook = [](const Problem&) { return crashed(); };
  const Expectations known{.expect_fail = {{"", "no_crash", "known", true, "--expect-fail no_crash:known"}}};
  const RunSettings s{.expectations = &known};
  ImplementationResult r = check(impl, {"matches_oracle", "no_crash"}, s);
  r.insufficient_fails = false;  // --allow-insufficient: still no pass
  const LawResult& crash = result(r, "no_crash");
  EXPECT_TRUE(crash.failed());
  EXPECT_FALSE(crash.expected_failure) << "honoured for an implementation that completed no call";
  EXPECT_TRUE(crash.counts_as_failure());
  EXPECT_NE(crash.run.message.find("not honoured"), std::string::npos) << crash.run.message;
  EXPECT_EQ(result(r, "matches_oracle").run.status, LawStatus::insufficient);
  EXPECT_TRUE(r.failed());
  // One that completes its other calls keeps its expected failure.
  Wrapped some;
  some.declared = kV1Features;
  some.hook = [](const Problem& p) -> std::optional<Outcome> {
    if (p.shape.kv_len > 3) return crashed();
    return std::nullopt;
  };
  const ImplementationResult ok = check(some, {"no_crash"}, s);
  EXPECT_TRUE(result(ok, "no_crash").expected_fail()) << result(ok, "no_crash").run.message;
}

TEST(EarnedVerdicts, NotRunForTheBudgetIsInsufficient) {
  Wrapped impl;
  const RunSettings s{.stop_reason = [] { return std::string("not run: the --budget of 0.001 s was spent"); }};
  const ImplementationResult r = check(impl, {"matches_oracle", "weights_sum_to_one"}, s);
  for (const LawResult& l : r.laws) {
    EXPECT_EQ(l.run.status, LawStatus::insufficient) << l.run.law;
    EXPECT_EQ(l.run.message, "not run: the --budget of 0.001 s was spent");
  }
  EXPECT_TRUE(r.failed());
}

// Version 3: a format of kv_formats refused on every call whose K or V uses it
// fails the laws about stored formats, naming the format; refusing only some
// of its calls (mixed with another format) is a finer limit.
constexpr uint32_t kQ8AndInt8 = (1u << ATTNCHECK_KV_Q8_0) | (1u << ATTNCHECK_KV_INT8);

TEST(EarnedVerdicts, ADeclaredFormatRefusedOnEveryCallFails) {
  Wrapped impl;
  impl.formats = kQ8AndInt8;
  impl.hook = [](const Problem& p) -> std::optional<Outcome> {
    if (p.k_format == KvFormat::q8_0 || p.v_format == KvFormat::q8_0) return refused("no q8_0 after all");
    return std::nullopt;
  };
  const ImplementationResult r = check(impl, {"matches_oracle", "quantized_matches_oracle"});
  const LawResult& about = result(r, "quantized_matches_oracle");
  EXPECT_EQ(about.run.status, LawStatus::fail) << about.run.message;
  EXPECT_NE(about.run.message.find("offers q8_0 in kv_formats"), std::string::npos) << about.run.message;
  EXPECT_EQ(about.run.message.find("int8"), std::string::npos) << "int8 was answered: " << about.run.message;
  EXPECT_TRUE(r.failed());
  EXPECT_EQ(result(r, "matches_oracle").run.status, LawStatus::pass) << result(r, "matches_oracle").run.message;
}

TEST(EarnedVerdicts, AFormatRefusedOnlyMixedWithAnotherIsNoFailure) {
  Wrapped impl;
  impl.formats = kQ8AndInt8;
  impl.hook = [](const Problem& p) -> std::optional<Outcome> {
    if (p.k_format != p.v_format) return refused("K and V in one format only");
    return std::nullopt;
  };
  const ImplementationResult r = check(impl, {"quantized_matches_oracle"});
  const LawResult& l = result(r, "quantized_matches_oracle");
  EXPECT_NE(l.run.status, LawStatus::fail) << l.run.message;
  EXPECT_GT(l.run.answered_formats & kQ8AndInt8, 0u);
}

TEST(EarnedVerdicts, TheFeaturesAnsweredAndRefusedCrossTheWire) {
  LawResult l;
  l.run.law = "matches_oracle";
  l.run.answered_features = ATTNCHECK_FEATURE_MASK | kBackwardFeature;
  l.run.refused_features = ATTNCHECK_FEATURE_SOFTCAP;
  l.run.answered_formats = 1u << ATTNCHECK_KV_INT8;
  l.run.refused_formats = 1u << ATTNCHECK_KV_Q4_0;
  LawResult back;
  ASSERT_TRUE(decode_law_result(encode_law_result(l), back));
  EXPECT_EQ(back.run.answered_features, l.run.answered_features);
  EXPECT_EQ(back.run.refused_features, l.run.refused_features);
  EXPECT_EQ(back.run.answered_formats, l.run.answered_formats);
  EXPECT_EQ(back.run.refused_formats, l.run.refused_formats);
}

// ---- the budget -------------------------------------------------------------

TEST(EarnedVerdicts, AHugeBudgetIsNoBound) {
  for (double seconds : {1e10, 1e300, std::numeric_limits<double>::infinity(), 1e9}) {
    RunBudget b(seconds);
    EXPECT_FALSE(b.over()) << seconds;
    EXPECT_FALSE(b.bounded()) << seconds;
  }
  RunBudget small(1e-6);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_TRUE(small.over());
  EXPECT_EQ(small.not_run(), "not run: the --budget of 1e-06 s was spent");
  RunBudget day(86400);
  EXPECT_TRUE(day.bounded());
  EXPECT_FALSE(day.over());
}

// ---- lengths_equal_slices and NaN --------------------------------------------

TEST(EarnedVerdicts, LengthsEqualSlicesTakesNaNAtTheSamePlaceAsEqual) {
  // NaN at row 0, column 0 of every head, in the padded batch and alone
  // alike: the same call gives the same answer, NaN included, as every other
  // law compares (law_support.h, mismatch).
  Wrapped impl;
  impl.spoil = [](const Problem& p, Outcome& o) {
    for (int64_t b = 0; b < p.shape.batch; ++b)
      for (int64_t h = 0; h < p.shape.heads; ++h)
        if (p.q_len_of(b) > 0 && p.shape.value_dim > 0)
          o.out[p.out_at(b * p.shape.heads + h, 0, 0)] = std::numeric_limits<double>::quiet_NaN();
  };
  const LawReport r = run_law(law("lengths_equal_slices"), impl, options(30, 20));
  EXPECT_EQ(r.status, LawStatus::pass) << r.message;
  // A NaN in one of the two only is still a difference.
  Wrapped one_sided;
  one_sided.spoil = [](const Problem& p, Outcome& o) {
    if (p.shape.batch > 1 && p.q_len_of(1) > 0)
      o.out[p.out_at(1 * p.shape.heads, 0, 0)] = std::numeric_limits<double>::quiet_NaN();
  };
  EXPECT_EQ(run_law(law("lengths_equal_slices"), one_sided, options(30, 20)).status, LawStatus::fail);
}

// ---- the process laws' verdicts on faults seen elsewhere (law_framework/process_law.h) --

TEST(ProcessLaws, TheFirstFaultSeenFailsItsLawUnlessItFailedOnItsOwn) {
  const Problem call;
  const std::vector<ProcessFault> seen = {
      {CallStatus::crash, call, "crash: the first", "matches_oracle"},
      {CallStatus::timeout, call, "timeout: one", "deterministic"},
      {CallStatus::crash, call, "crash: the second", "deterministic"},
      {CallStatus::out_of_bounds_write, call, "out_of_bounds_write: one", "the probes"},
  };
  // no_out_of_bounds_write failed on its own case (shrunk): that failure stays.
  const std::vector<ProcessLawCharge> charges =
      charge_process_faults(seen, [](const Law& l) { return l.name == "no_out_of_bounds_write"; });
  ASSERT_EQ(charges.size(), 2u);
  EXPECT_EQ(charges[0].law->name, "no_crash");
  EXPECT_EQ(charges[0].fault, &seen[0]);  // the first crash, not the second
  EXPECT_EQ(charges[1].law->name, "no_timeout");
  EXPECT_EQ(charges[1].fault, &seen[1]);
  // A call that answered is no process law's.
  EXPECT_TRUE(charge_process_faults({{CallStatus::ok, call, "", "x"}}, [](const Law&) { return false; }).empty());
}

TEST(ProcessLaws, AProcessLawsOwnFailureIsACallThatDidNotComplete) {
  EXPECT_EQ(completed_judged_calls("no_crash", 5, true), 4);
  EXPECT_EQ(completed_judged_calls("no_crash", 5, false), 5);       // charged from elsewhere: not in its count
  EXPECT_EQ(completed_judged_calls("matches_oracle", 5, true), 5);  // a wrong number is a completed call
}

}  // namespace
}  // namespace attncheck
