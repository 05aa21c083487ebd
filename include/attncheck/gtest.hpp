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
//                               (docs/case-files.md; it records "cpp:NAME", a callable only this
//                               binary holds, so `attncheck replay FILE --plugin PATH` or
//                               `--impl NAME` replays it on a plugin or built-in build of the kernel)
// A failure is reported at the line of ATTNCHECK_TEST in your test file, with the
// command that reruns exactly that test:
//   rerun: ATTNCHECK_SEED=N /path/to/this/test/binary --gtest_filter='Suite.Name/law'
// A law that judged nothing the callable offers is reported as a skipped test.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

#include "attncheck/attncheck.hpp"

namespace attncheck::gtest {

// A word as a POSIX shell reads it back: quoted unless it is plainly safe.
inline std::string shell_word(const std::string& w) {
  const bool plain = !w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                       "0123456789-_./=:,+@%") == std::string::npos;
  if (plain) return w;
  std::string q = "'";
  for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// This test binary as a path a shell can run (Linux: /proc/self/exe); where
// the system does not say, a placeholder that names what to put there.
inline std::string this_binary() {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec || p.empty() ? std::string("<this test binary>") : shell_word(p.string());
}

// One law on one callable, as one test. Its failures are reported at `file`:`line`,
// the ATTNCHECK_TEST in the user's test file, not at this header.
class LawTest : public ::testing::Test {
 public:
  LawTest(std::shared_ptr<const Callable> callable, Options options, std::string law, std::string test,
          std::string file, int line)
      : callable_(std::move(callable)), options_(std::move(options)), law_(std::move(law)), test_(std::move(test)),
        file_(std::move(file)), line_(line) {}

  void TestBody() override {
    Options o = options_;
    o.laws = {law_};
    if (o.save_failures_dir.empty())
      if (const char* dir = std::getenv("ATTNCHECK_REGRESSION_DIR"); dir && *dir) o.save_failures_dir = dir;
    Report r;
    try {
      r = check(*callable_, o);
    } catch (const UsageError& e) {
      GTEST_FAIL_AT(file_.c_str(), line_) << e.what();
    }
    // Each test checks its one law alone, so this reruns exactly the failing run.
    const std::string rerun = "rerun: ATTNCHECK_SEED=" + std::to_string(r.seed) + " " + this_binary() +
                              " --gtest_filter=" + shell_word(test_);
    for (const LawOutcome& l : r.laws) {
      if (l.status == Status::fail) {
        ADD_FAILURE_AT(file_.c_str(), line_)
            << l.law << " failed on " << r.implementation << " after " << l.judged << " judged case(s)"
            << (l.found_while.empty() ? "" : " (a fault provoked by " + l.found_while + "'s case)") << "\n"
            << "  message:   " << l.message << "\n"
            << (l.diagnosis.empty() ? "" : "  diagnosis: " + l.diagnosis + "\n")
            << "  shrunk case (" << l.shrink_steps << " shrink steps):\n    " << l.failing_case << "\n"
            << (l.failing_calls.empty() ? "" : "  " + l.failing_calls)
            << (l.case_file.empty() ? ""
                                    : "  saved to " + l.case_file + "\n  replay it on a plugin or built-in build of " +
                                          "this kernel: attncheck replay " + shell_word(l.case_file) +
                                          " --plugin PATH (or --impl NAME)\n")
            << "  " << rerun;
      } else if (l.status == Status::insufficient && !r.allow_insufficient) {
        ADD_FAILURE_AT(file_.c_str(), line_)
            << l.law << " judged only " << l.judged << " of " << l.cases
            << " drawn cases: too few for a pass (Options::min_judged " << o.min_judged << ")\n  " << l.message
            << "\n  " << rerun;
      }
    }
    for (const std::string& n : r.notes) std::cout << "[ attncheck] " << n << "\n";
    const LawOutcome* mine = r.law(law_);
    if (mine && mine->status == Status::skipped && !HasFailure()) GTEST_SKIP() << mine->message;
  }

 private:
  std::shared_ptr<const Callable> callable_;
  Options options_;
  std::string law_, test_, file_;
  int line_;
};

// A test that fails with the reason the registration could not be made (an
// unknown law in Options::laws): at static initialisation nothing can be thrown.
class RegistrationError : public ::testing::Test {
 public:
  RegistrationError(std::string what, std::string file, int line)
      : what_(std::move(what)), file_(std::move(file)), line_(line) {}
  void TestBody() override { GTEST_FAIL_AT(file_.c_str(), line_) << what_; }

 private:
  std::string what_, file_;
  int line_;
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
                              [=]() -> ::testing::Test* { return new LawTest(shared, options, law, full, file, line); });
    }
  } catch (const UsageError& e) {
    const std::string what = e.what();
    ::testing::RegisterTest(suite, (std::string(name) + "/registration").c_str(), nullptr, nullptr, file, line,
                            [=, where = std::string(file)]() -> ::testing::Test* {
                              return new RegistrationError(what, where, line);
                            });
  }
  return true;
}

}  // namespace attncheck::gtest

// One test per law of the default catalogue: Suite.Name/<law>.
#define ATTNCHECK_TEST(Suite, Name, ...)                                                              \
  static const bool attncheck_registered_##Suite##_##Name [[maybe_unused]] =                          \
      ::attncheck::gtest::register_laws(#Suite, #Name, __FILE__, __LINE__,                            \
                                        ::attncheck::make_callable(__VA_ARGS__))

// The same with attncheck::Options (laws, dtypes, cases, profile, features, promises, ...).
#define ATTNCHECK_TEST_WITH(Suite, Name, options, ...)                                                \
  static const bool attncheck_registered_##Suite##_##Name [[maybe_unused]] =                          \
      ::attncheck::gtest::register_laws(#Suite, #Name, __FILE__, __LINE__,                            \
                                        ::attncheck::make_callable(__VA_ARGS__), (options))
