// attncheck::check (include/attncheck/attncheck.hpp) on callables of every
// kind the header takes: a functor with state, a lambda, a std::function, a
// v2 lambda with declared features, a v2 forward with its backward. The
// callables forward to the built-ins, so the verdicts are known: the
// reference passes, seed_unscaled fails query_sensitivity with its diagnosis.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>

#include "attncheck/attncheck.hpp"
#include "casefile/case_file.h"
#include "cli/check_command.h"
#include "driver/law_run.h"
#include "impls/builtins.h"

namespace {

using attncheck::find_builtin;

// State the checker must not lose: every call is counted.
struct CountingReference {
  std::shared_ptr<int> calls;
  int operator()(const attncheck_call* c, char* err, size_t n) {
    ++*calls;
    return find_builtin("reference")->forward(c, err, n);
  }
};

attncheck::Options few(std::vector<std::string> laws) {
  attncheck::Options o;
  o.laws = std::move(laws);
  o.cases = 30;
  o.seed = 20261130;
  return o;
}

// attncheck.hpp writes the defaults as numbers (a public header includes no
// internal one): they must stay the command line's, as its comment promises.
TEST(CheckApi, OptionsHaveTheCommandLinesDefaults) {
  const attncheck::Options o;
  EXPECT_EQ(o.cases, attncheck::kDefaultCases);
  EXPECT_EQ(o.min_judged, attncheck::kDefaultMinJudged);
  EXPECT_EQ(o.shrink_seconds, attncheck::kShrinkSecondsPerLaw);
}

TEST(CheckApi, FunctorWithStateIsCalledAndPasses) {
  auto calls = std::make_shared<int>(0);
  attncheck::Options o = few({"weights_sum_to_one", "matches_oracle"});
  o.name = "counting_reference";
  const attncheck::Report r = attncheck::check(CountingReference{calls}, o);
  EXPECT_TRUE(r.passed()) << r.text();
  EXPECT_EQ(r.implementation, "counting_reference");
  EXPECT_EQ(r.seed, 20261130u);
  ASSERT_EQ(r.laws.size(), 2u);
  for (const attncheck::LawOutcome& l : r.laws) {
    EXPECT_EQ(l.status, attncheck::Status::pass) << l.law << ": " << l.message;
    EXPECT_GE(l.judged, 20) << l.law;
  }
  // Every judged case is at least one call of this very functor (its state is shared, not copied away).
  EXPECT_GE(*calls, 60);
  EXPECT_NE(r.text().find("weights_sum_to_one"), std::string::npos);
}

// A law that fails on a call it built (masked_keys_ignored's masked call): the
// outcome names that call and how it was built, and the saved case is that call.
TEST(CheckApi, AFailureOnADerivedCallNamesItAndSavesIt) {
  const auto off_by_one = [](const attncheck_call* c, char* err, size_t n) {
    return find_builtin("causal_off_by_one")->forward(c, err, n);
  };
  attncheck::Options o = few({"masked_keys_ignored"});
  const std::string dir = (std::filesystem::temp_directory_path() / "attncheck_api_derived").string();
  std::filesystem::remove_all(dir);
  o.save_failures_dir = dir;
  const attncheck::Report r = attncheck::check(off_by_one, o);
  const attncheck::LawOutcome* l = r.law("masked_keys_ignored");
  ASSERT_NE(l, nullptr);
  ASSERT_EQ(l->status, attncheck::Status::fail) << r.text();
  EXPECT_EQ(l->failing_calls.rfind("failing call (before): the case with a mask added", 0), 0u) << l->failing_calls;
  EXPECT_NE(l->failing_calls.find("compared with (with huge hidden keys)"), std::string::npos) << l->failing_calls;
  EXPECT_NE(r.text().find("failing call (before)"), std::string::npos) << r.text();
  ASSERT_FALSE(l->case_file.empty());
  EXPECT_TRUE(attncheck::load_case(l->case_file).problem.has_mask());
  std::filesystem::remove_all(dir);
}

TEST(CheckApi, UnscaledLambdaFailsQuerySensitivityWithDiagnosisAndShrunkCase) {
  const auto unscaled = [](const attncheck_call* c, char* err, size_t n) {
    return find_builtin("seed_unscaled")->forward(c, err, n);
  };
  const attncheck::Report r = attncheck::check(unscaled, few({"query_sensitivity"}));
  EXPECT_FALSE(r.passed());
  const attncheck::LawOutcome* l = r.law("query_sensitivity");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->status, attncheck::Status::fail);
  EXPECT_NE(l->diagnosis.find("without the 1/sqrt(d) scale"), std::string::npos) << l->diagnosis;
  EXPECT_NE(l->failing_case.find("head_dim="), std::string::npos) << l->failing_case;
  EXPECT_NE(l->message.find("ratio"), std::string::npos) << l->message;
  EXPECT_GE(l->judged, 1);
  EXPECT_NE(r.text().find("FAIL"), std::string::npos) << r.text();
}

TEST(CheckApi, StdFunctionWithoutMessageSlot) {
  const std::function<int(const attncheck_call*)> f = [](const attncheck_call* c) {
    char err[64];
    return find_builtin("online")->forward(c, err, sizeof err);
  };
  const attncheck::Report r = attncheck::check(f, few({"single_key_passthrough"}));
  EXPECT_TRUE(r.passed()) << r.text();
}

TEST(CheckApi, V2LambdaIsJudgedOnTheFeaturesItDeclares) {
  const attncheck::BuiltinInfo* ref = find_builtin("reference");
  ASSERT_NE(ref->forward_v2, nullptr);
  const auto v2 = [ref](const attncheck_call_v2* c, char* err, size_t n) { return ref->forward_v2(c, err, n); };
  attncheck::Options o = few({"gqa_equals_repeated_kv"});
  o.features = ref->features & ((1u << 11) - 1);  // its v2 bits: PACKED is version 3's, for a v3 callable
  const attncheck::Report declared = attncheck::check(v2, o);
  ASSERT_NE(declared.law("gqa_equals_repeated_kv"), nullptr);
  EXPECT_EQ(declared.law("gqa_equals_repeated_kv")->status, attncheck::Status::pass) << declared.text();
  // Without GQA declared the law has nothing to judge: skipped, never passed.
  o.features = 0;
  const attncheck::Report undeclared = attncheck::check(v2, o);
  EXPECT_EQ(undeclared.law("gqa_equals_repeated_kv")->status, attncheck::Status::skipped) << undeclared.text();
}

TEST(CheckApi, BackwardIsJudgedByTheGradientLaws) {
  const attncheck::BuiltinInfo* wrong = find_builtin("grad_dv_unnormalised");
  ASSERT_NE(wrong, nullptr);
  ASSERT_NE(wrong->backward_v2, nullptr);
  attncheck::Options o = few({"grad_values_sum"});
  o.features = wrong->features;
  const attncheck::Report r = attncheck::check(attncheck::with_backward(wrong->forward_v2, wrong->backward_v2), o);
  ASSERT_NE(r.law("grad_values_sum"), nullptr);
  EXPECT_EQ(r.law("grad_values_sum")->status, attncheck::Status::fail) << r.text();
}

TEST(CheckApi, SavesTheShrunkCaseAsACaseFile) {
  const std::string dir = ::testing::TempDir() + "check_api_cases";
  std::filesystem::remove_all(dir);
  attncheck::Options o = few({"query_sensitivity"});
  o.name = "unscaled";
  o.save_failures_dir = dir;
  const attncheck::Report r = attncheck::check(find_builtin("seed_unscaled")->forward, o);
  const attncheck::LawOutcome* l = r.law("query_sensitivity");
  ASSERT_NE(l, nullptr);
  ASSERT_FALSE(l->case_file.empty()) << r.text();
  const attncheck::CaseRecord rec = attncheck::load_case(l->case_file);
  EXPECT_EQ(rec.law, "query_sensitivity");
  EXPECT_EQ(rec.implementation, "unscaled");
  EXPECT_EQ(rec.source, "cpp:unscaled");
  EXPECT_EQ(rec.seed, 20261130u);
}

TEST(CheckApi, SameSeedSameVerdict) {
  const auto unscaled = find_builtin("seed_unscaled")->forward;
  const attncheck::Report a = attncheck::check(unscaled, few({"query_sensitivity"}));
  const attncheck::Report b = attncheck::check(unscaled, few({"query_sensitivity"}));
  EXPECT_EQ(a.law("query_sensitivity")->message, b.law("query_sensitivity")->message);
  EXPECT_EQ(a.law("query_sensitivity")->failing_case, b.law("query_sensitivity")->failing_case);
}

TEST(CheckApi, UsageErrorsNameTheProblem) {
  const auto ref = find_builtin("reference")->forward;
  attncheck::Options o;
  o.laws = {"no_such_law"};
  EXPECT_THROW(attncheck::check(ref, o), attncheck::UsageError);
  o = {};
  o.dtypes = "f33";
  try {
    attncheck::check(ref, o);
    ADD_FAILURE() << "no UsageError";
  } catch (const attncheck::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("f33"), std::string::npos) << e.what();
  }
  EXPECT_THROW(attncheck::check(attncheck::Callable{}, attncheck::Options{}), attncheck::UsageError);
  o = {};
  o.features = ATTNCHECK_FEATURE_GQA;  // a v1 callable declares no v2 features
  EXPECT_THROW(attncheck::check(ref, o), attncheck::UsageError);
  // A callable that supports nothing requested cannot be checked.
  const auto nothing = [](const attncheck_call*) { return ATTNCHECK_UNSUPPORTED; };
  EXPECT_THROW(attncheck::check(nothing, attncheck::Options{}), attncheck::UsageError);
}

// ATTNCHECK_SEED is read as everywhere (driver/seed_env.h): a text that is
// not a whole number is refused, naming it, not read as seed 0 ('abc') or
// 2^64 - 1 ('-1', which strtoull took); Options::seed wins and leaves it unread.
TEST(CheckApi, SeedFromTheEnvironmentIsAWholeNumber) {
  const auto ref = find_builtin("reference")->forward;
  const char* saved = std::getenv("ATTNCHECK_SEED");
  const std::string kept = saved ? saved : "";
  attncheck::Options o;
  o.laws = {"weights_sum_to_one"};
  o.cases = 5;
  for (const char* bad : {"abc", "-1", " 7", "18446744073709551616"}) {
    ::setenv("ATTNCHECK_SEED", bad, 1);
    try {
      attncheck::check(ref, o);
      ADD_FAILURE() << "ATTNCHECK_SEED='" << bad << "' was taken as a seed";
    } catch (const attncheck::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("ATTNCHECK_SEED='") + bad + "' is not a seed"),
                std::string::npos)
          << e.what();
    }
  }
  ::setenv("ATTNCHECK_SEED", "4242", 1);
  EXPECT_EQ(attncheck::check(ref, o).seed, 4242u);
  ::setenv("ATTNCHECK_SEED", "abc", 1);
  o.seed = 7;
  EXPECT_EQ(attncheck::check(ref, o).seed, 7u);
  if (saved) ::setenv("ATTNCHECK_SEED", kept.c_str(), 1);
  else ::unsetenv("ATTNCHECK_SEED");
}

TEST(CheckApi, SelectedLawsFollowTheCatalogue) {
  const std::vector<std::string> all = attncheck::selected_laws({});
  EXPECT_GT(all.size(), 30u);
  EXPECT_EQ(std::count(all.begin(), all.end(), "nan_propagates"), 0);  // opt-in
  attncheck::Options o;
  o.laws = {"query_sensitivity", "matches_oracle"};
  EXPECT_EQ(attncheck::selected_laws(o), (std::vector<std::string>{"matches_oracle", "query_sensitivity"}));
}

}  // namespace
