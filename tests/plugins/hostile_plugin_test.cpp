// Plugins that attack the checker rather than getting attention wrong
// (issue #13): processes left behind, a shared region resized under the
// parent's feet, a host that cannot be restarted, stray writes outside every
// guard, file descriptors closed from under the host, control characters in
// the plugin's texts. None of them may kill, hang or fool the checker.
//
// The plugins come from tests/plugins/*.c (built into ATTNCHECK_TEST_PLUGIN_DIR).
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "oracle/oracle.h"
#include "host/plugin_host.h"
#include "problem/problem.h"

#ifndef ATTNCHECK_TEST_PLUGIN_DIR
#error "ATTNCHECK_TEST_PLUGIN_DIR must name the folder of the test plugins"
#endif

namespace attncheck {
namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string test_plugin(const std::string& stem) { return std::string(ATTNCHECK_TEST_PLUGIN_DIR) + "/" + stem + ".so"; }

// q/k/v of the given shape with small dyadic values (exact in f32 and f64).
Problem problem_of(int64_t q_len, int64_t kv_len, int64_t head_dim = 2, int64_t value_dim = 2,
                   DType t = DType::f64) {
  Shape s;
  s.q_len = q_len;
  s.kv_len = kv_len;
  s.head_dim = head_dim;
  s.value_dim = value_dim;
  Problem p = make_problem(t, s);
  uint64_t seed = 7;
  for (std::vector<double>* tensor : {&p.q, &p.k, &p.v})
    for (double& x : *tensor) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      x = static_cast<double>(static_cast<int>((seed >> 33) % 9) - 4) / 4.0;
    }
  return p;
}

std::unique_ptr<Implementation> load_or_fail(const std::string& path, int timeout_ms = 2000) {
  std::string error;
  PluginOptions o;
  o.timeout_ms = timeout_ms;
  auto impl = load_plugin(path, o, error);
  EXPECT_TRUE(impl) << error;
  return impl;
}

void expect_matches_oracle(const Problem& p, const Outcome& o) {
  ASSERT_EQ(o.status, CallStatus::ok) << call_status_name(o.status) << ": " << o.message;
  EXPECT_TRUE(compare_to_oracle(p, oracle(p), o.out).ok) << p.describe();
}

// Sets an environment variable for the plugins this test loads, and unsets it after.
struct ScopedEnv {
  std::string name;
  ScopedEnv(std::string n, const std::string& value) : name(std::move(n)) { ::setenv(name.c_str(), value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

std::string scratch_path(const char* stem) {
  return (fs::temp_directory_path() / (std::string("attncheck-") + stem + "-" + std::to_string(::getpid()))).string();
}

// Whether `pid` is a process that still runs (a zombie has ended).
bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

// The pids the orphan plugin recorded; kills whatever of them survived, so a
// failing test leaves nothing behind either.
struct PidFile {
  std::string path = scratch_path("pids");
  ScopedEnv env{"ATTNCHECK_TEST_PID_FILE", path};
  PidFile() { fs::remove(path); }
  ~PidFile() {
    for (pid_t pid : pids())
      if (alive(pid)) ::kill(pid, SIGKILL);
    fs::remove(path);
  }
  std::vector<pid_t> pids() const {
    std::vector<pid_t> v;
    std::ifstream in(path);
    for (int pid; in >> pid;) v.push_back(pid);
    return v;
  }
  // The recorded processes that still run, after waiting up to `patience` for them to go.
  std::vector<pid_t> survivors(std::chrono::milliseconds patience = std::chrono::milliseconds(0)) const {
    const auto deadline = Clock::now() + patience;
    for (;;) {
      std::vector<pid_t> left;
      for (pid_t pid : pids())
        if (alive(pid)) left.push_back(pid);
      if (left.empty() || Clock::now() >= deadline) return left;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
};

// ---- every process a plugin starts ends with its host -----------------------

TEST(PluginOrphans, ChildrenOfACrashedHostEndWithIt) {
  PidFile pids;
  auto impl = load_or_fail(test_plugin("orphan_plugin"));
  ASSERT_TRUE(impl);
  const Outcome o = impl->run(problem_of(2, 4));  // two sleepers (one setsid), fds closed, then SIGSEGV
  EXPECT_EQ(o.status, CallStatus::crash) << o.message;
  EXPECT_NE(o.message.find("SIGSEGV"), std::string::npos) << o.message;
  ASSERT_EQ(pids.pids().size(), 2u);
  // When run() returns, the call has ended: nothing it started may still run.
  EXPECT_TRUE(pids.survivors().empty()) << pids.survivors().size() << " process(es) outlived the crashed host";
  const Problem fine = problem_of(2, 2);
  expect_matches_oracle(fine, impl->run(fine));
}

TEST(PluginOrphans, ChildrenOfAWorkingHostEndWhenItIsClosed) {
  PidFile pids;
  {
    auto impl = load_or_fail(test_plugin("orphan_plugin"));
    ASSERT_TRUE(impl);
    const Problem p = problem_of(2, 3);  // two sleepers, then a correct answer
    expect_matches_oracle(p, impl->run(p));
    ASSERT_EQ(pids.pids().size(), 2u);
  }
  EXPECT_TRUE(pids.survivors().empty()) << "processes outlived the plugin host";
}

TEST(PluginOrphans, ChildrenEndWhenTheCheckerIsKilled) {
  PidFile pids;
  std::fflush(nullptr);
  const pid_t checker = ::fork();
  ASSERT_GE(checker, 0);
  if (checker == 0) {  // a checker that dies without cleaning up: SIGKILL
    std::string error;
    auto impl = load_plugin(test_plugin("orphan_plugin"), {}, error);
    if (impl) (void)impl->run(problem_of(2, 3));
    ::raise(SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(checker, &status, 0), checker);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_EQ(pids.pids().size(), 2u);
  // Not instant (the cleanup runs in another process), but it must happen.
  EXPECT_TRUE(pids.survivors(std::chrono::seconds(10)).empty()) << "processes outlived the killed checker";
}

TEST(PluginFaults, AbortWhileAChildHoldsTheSocketIsACrash) {
  PidFile pids;
  const int limit_ms = 8000;
  auto impl = load_or_fail(test_plugin("orphan_plugin"), limit_ms);
  ASSERT_TRUE(impl);
  const auto start = Clock::now();
  const Outcome o = impl->run(problem_of(2, 5));  // sleepers keep the socket open, the host aborts
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  EXPECT_EQ(o.status, CallStatus::crash) << call_status_name(o.status) << ": " << o.message;
  EXPECT_NE(o.message.find("SIGABRT"), std::string::npos) << o.message;
  EXPECT_LT(took, limit_ms / 2) << "the crash was only noticed at the time limit";
  EXPECT_TRUE(pids.survivors().empty());
}

// ---- the shared region ------------------------------------------------------

TEST(SharedRegionAttack, PluginCannotShrinkOrGrowIt) {
  auto impl = load_or_fail(test_plugin("truncate_plugin"));
  ASSERT_TRUE(impl);
  // Each call tries to truncate the region to 0 bytes and to grow it to 1 GiB
  // after writing out; the parent then reads guards and out: no SIGBUS.
  for (int64_t kv : {2, 3, 200}) {
    const Problem p = problem_of(3, kv, 8, 8);
    expect_matches_oracle(p, impl->run(p));
  }
}

TEST(PluginFaults, StrayWritesBeyondTheGuardsAreCaught) {
  auto impl = load_or_fail(test_plugin("stray_write_plugin"));
  ASSERT_TRUE(impl);
  // 4160 bytes past the end of out: beyond its 4096-byte guard zone.
  const Outcome far = impl->run(problem_of(2, 4));
  EXPECT_EQ(far.status, CallStatus::out_of_bounds_write) << call_status_name(far.status) << ": " << far.message;
  // One byte after q [1][1][1][3] f64 (24 bytes), in the gap up to k's 64-byte alignment.
  const Outcome gap = impl->run(problem_of(1, 5, 3, 2));
  EXPECT_EQ(gap.status, CallStatus::out_of_bounds_write) << call_status_name(gap.status) << ": " << gap.message;
  const Problem fine = problem_of(2, 3);
  expect_matches_oracle(fine, impl->run(fine));
}

// ---- restarting -------------------------------------------------------------

TEST(PluginRestart, AFailedRestartIsAProcessFaultAndIsNotRetried) {
  const std::string marker = scratch_path("reload");
  fs::remove(marker);
  ScopedEnv env("ATTNCHECK_TEST_RELOAD_MARKER", marker);
  auto impl = load_or_fail(test_plugin("reload_fault_plugin"));
  ASSERT_TRUE(impl);
  const Problem fine = problem_of(2, 2);
  expect_matches_oracle(fine, impl->run(fine));
  EXPECT_EQ(impl->run(problem_of(2, 5)).status, CallStatus::crash);
  // The host cannot be restarted (its constructor crashes on a second load):
  // that is a process fault of the plugin, not an error of each law that asks.
  const Outcome after = impl->run(fine);
  EXPECT_TRUE(is_process_fault(after.status)) << call_status_name(after.status) << ": " << after.message;
  EXPECT_NE(after.message.find("restart"), std::string::npos) << after.message;
  // Later calls are not made: skipped with the reason, which names the first fault.
  const Outcome later = impl->run(fine);
  EXPECT_EQ(later.status, CallStatus::unsupported);
  EXPECT_NE(later.message.find("SIGSEGV"), std::string::npos) << "the first fault is not named: " << later.message;
  EXPECT_NE(later.message.find("not called"), std::string::npos) << later.message;
  const auto start = Clock::now();
  for (int i = 0; i < 20; ++i) EXPECT_EQ(impl->run(fine).status, CallStatus::unsupported);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 2.0) << "every call tried to load it again";
  fs::remove(marker);
}

// ---- file descriptors and texts ---------------------------------------------

TEST(PluginLoad, ClosingFdsZeroToHundredInTheConstructorIsSurvived) {
  ScopedEnv env("ATTNCHECK_TEST_CLOSE_FDS_UPTO", "100");
  auto impl = load_or_fail(test_plugin("close_fds_plugin"));
  ASSERT_TRUE(impl);
  const Problem p = problem_of(2, 3);
  expect_matches_oracle(p, impl->run(p));
}

TEST(PluginLoad, ClosingEveryFdInTheConstructorIsNamed) {
  ScopedEnv env("ATTNCHECK_TEST_CLOSE_FDS_UPTO", "all");
  std::string error;
  auto impl = load_plugin(test_plugin("close_fds_plugin"), {}, error);
  EXPECT_FALSE(impl);
  EXPECT_NE(error.find("closed"), std::string::npos) << error;
  EXPECT_NE(error.find("file descriptor"), std::string::npos) << error;
}

bool has_control_characters(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return s.find("\xc2\x9b") != std::string::npos;  // C1 CSI, as UTF-8
}

TEST(PluginText, NameAndErrorTextAreEscaped) {
  auto impl = load_or_fail(test_plugin("terminal_escape_plugin"));
  ASSERT_TRUE(impl);
  EXPECT_FALSE(has_control_characters(impl->name())) << impl->name();
  EXPECT_NE(impl->name().find("escape"), std::string::npos) << impl->name();
  const Outcome o = impl->run(problem_of(2, 2, 2, 2, DType::f16));
  EXPECT_EQ(o.status, CallStatus::unsupported);
  EXPECT_FALSE(has_control_characters(o.message)) << o.message;
  EXPECT_NE(o.message.find("16-bit"), std::string::npos) << o.message;
}

}  // namespace
}  // namespace attncheck
