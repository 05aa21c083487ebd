// ATTNCHECK_TEST: every law as its own GoogleTest test, in your own test
// binary, with RapidCheck underneath (generation, shrinking to the smallest
// failing case), as RapidCheck's RC_GTEST_PROP or FuzzTest's FUZZ_TEST take
// your function inside your own test file. Link attncheck::attncheck and
// GTest::gtest (or gtest_main).
//
//   #include <attncheck/gtest.hpp>
//   int my_attention(const attncheck_call* c, char* err, size_t n);   // or any callable: attncheck.hpp
//   ATTNCHECK_TEST(MyAttention, Forward, my_attention);
//   ATTNCHECK_TEST(MyAttention, Stateful, MyFunctor{workspace});
//   ATTNCHECK_TEST_WITH(MyAttention, V2, v2_options(), [](const attncheck_call_v2* c) { ... });
//
// registers MyAttention.Forward/matches_oracle, MyAttention.Forward/query_sensitivity,
// ... one test per law of the default catalogue (or of Options::laws), at
// static initialisation (testing::RegisterTest), so --gtest_filter, sharding
// (GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX) and gtest_discover_tests see them.
// The environment, read when a test runs:
//   ATTNCHECK_SEED=N            the run's seed (default 1; printed on every failure)
//   ATTNCHECK_REGRESSION_DIR=D  each failing law's shrunk case is saved there as a case file
//                               (`attncheck replay D` runs them; copy one into your regression cases)
// A law that judged nothing the callable offers is reported as a skipped test.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "attncheck/attncheck.hpp"

namespace attncheck::gtest {

// One law on one callable, as one test.
class LawTest : public ::testing::Test {
 public:
  LawTest(std::shared_ptr<const Callable> callable, Options options, std::string law, std::string test)
      : callable_(std::move(callable)), options_(std::move(options)), law_(std::move(law)), test_(std::move(test)) {}

  void TestBody() override {
    Options o = options_;
    o.laws = {law_};
    if (o.save_failures_dir.empty())
      if (const char* dir = std::getenv("ATTNCHECK_REGRESSION_DIR"); dir && *dir) o.save_failures_dir = dir;
    Report r;
    try {
      r = check(*callable_, o);
    } catch (const UsageError& e) {
      FAIL() << e.what();
    }
    const std::string rerun = "rerun: ATTNCHECK_SEED=" + std::to_string(r.seed) + " <this test binary> --gtest_filter='" +
                              test_ + "'";
    for (const LawOutcome& l : r.laws) {
      if (l.status == Status::fail) {
        ADD_FAILURE() << l.law << " failed on " << r.implementation << " after " << l.judged << " judged case(s)"
                      << (l.found_while.empty() ? "" : " (a fault provoked by " + l.found_while + "'s case)") << "\n"
                      << "  message:   " << l.message << "\n"
                      << (l.diagnosis.empty() ? "" : "  diagnosis: " + l.diagnosis + "\n")
                      << "  shrunk case (" << l.shrink_steps << " shrink steps):\n    " << l.failing_case << "\n"
                      << (l.case_file.empty() ? "" : "  saved to " + l.case_file + " (attncheck replay it)\n")
                      << "  " << rerun;
      } else if (l.status == Status::insufficient && !r.allow_insufficient) {
        ADD_FAILURE() << l.law << " judged only " << l.judged << " of " << l.cases
                      << " drawn cases: too few for a pass (Options::min_judged " << o.min_judged << ")\n  "
                      << l.message << "\n  " << rerun;
      }
    }
    for (const std::string& n : r.notes) std::cout << "[ attncheck] " << n << "\n";
    const LawOutcome* mine = r.law(law_);
    if (mine && mine->status == Status::skipped && !HasFailure()) GTEST_SKIP() << mine->message;
  }

 private:
  std::shared_ptr<const Callable> callable_;
  Options options_;
  std::string law_, test_;
};

// A test that fails with the reason the registration could not be made (an
// unknown law in Options::laws): at static initialisation nothing can be thrown.
class RegistrationError : public ::testing::Test {
 public:
  explicit RegistrationError(std::string what) : what_(std::move(what)) {}
  void TestBody() override { FAIL() << what_; }

 private:
  std::string what_;
};

inline bool register_laws(const char* suite, const char* name, const char* file, int line, Callable callable,
                          Options options = {}) {
  if (options.name == Options{}.name) options.name = std::string(suite) + "." + name;
  auto shared = std::make_shared<const Callable>(std::move(callable));
  try {
    for (const std::string& law : selected_laws(options)) {
      const std::string test = std::string(name) + "/" + law;
      const std::string full = std::string(suite) + "." + test;
      ::testing::RegisterTest(suite, test.c_str(), nullptr, nullptr, file, line,
                              [=]() -> ::testing::Test* { return new LawTest(shared, options, law, full); });
    }
  } catch (const UsageError& e) {
    const std::string what = e.what();
    ::testing::RegisterTest(suite, (std::string(name) + "/registration").c_str(), nullptr, nullptr, file, line,
                            [=]() -> ::testing::Test* { return new RegistrationError(what); });
  }
  return true;
}

}  // namespace attncheck::gtest

// One test per law of the default catalogue: Suite.Name/<law>.
#define ATTNCHECK_TEST(Suite, Name, ...)                                                              \
  static const bool attncheck_registered_##Suite##_##Name [[maybe_unused]] =                          \
      ::attncheck::gtest::register_laws(#Suite, #Name, __FILE__, __LINE__,                            \
                                        ::attncheck::make_callable(__VA_ARGS__))

// The same with attncheck::Options (laws, dtypes, cases, profile, v2 features, ...).
#define ATTNCHECK_TEST_WITH(Suite, Name, options, ...)                                                \
  static const bool attncheck_registered_##Suite##_##Name [[maybe_unused]] =                          \
      ::attncheck::gtest::register_laws(#Suite, #Name, __FILE__, __LINE__,                            \
                                        ::attncheck::make_callable(__VA_ARGS__), (options))
