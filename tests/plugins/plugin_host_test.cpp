// The plugin host (src/host/): loading refuses broken libraries with a
// message naming the file and the cause; every process fault of a plugin
// becomes its CallStatus while the parent lives on; the next call is served
// by a fresh child; a hang returns within its limit.
//
// The plugins come from tests/plugins/*.c (built into ATTNCHECK_TEST_PLUGIN_DIR)
// and plugins/ (ATTNCHECK_PLUGIN_DIR).
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

#include "impls/in_process.h"
#include "oracle/oracle.h"
#include "host/plugin_host.h"
#include "problem/problem.h"

#ifndef ATTNCHECK_TEST_PLUGIN_DIR
#error "ATTNCHECK_TEST_PLUGIN_DIR must name the folder of the test plugins"
#endif
#ifndef ATTNCHECK_PLUGIN_DIR
#error "ATTNCHECK_PLUGIN_DIR must name the folder of the shipped plugins"
#endif

namespace attncheck {
namespace {

std::string test_plugin(const std::string& stem) { return std::string(ATTNCHECK_TEST_PLUGIN_DIR) + "/" + stem + ".so"; }
std::string shipped_plugin(const std::string& stem) { return std::string(ATTNCHECK_PLUGIN_DIR) + "/lib" + stem + ".so"; }

// A problem of the given shape with small dyadic values (exact in every dtype),
// drawn from a fixed-seed LCG so failures reproduce.
Problem problem_of(const Shape& s, DType t = DType::f64, Causal causal = Causal::none, uint64_t seed = 1) {
  Problem p = make_problem(t, s, causal);
  auto next = [&seed] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(static_cast<int>((seed >> 33) % 17) - 8) / 4.0;  // -2 .. 2 in steps of 1/4
  };
  for (std::vector<double>* tensor : {&p.q, &p.k, &p.v})
    for (double& x : *tensor) x = next();
  return p;
}

Shape shape(int64_t batch, int64_t heads, int64_t q_len, int64_t kv_len, int64_t head_dim, int64_t value_dim) {
  Shape s;
  s.batch = batch;
  s.heads = heads;
  s.q_len = q_len;
  s.kv_len = kv_len;
  s.head_dim = head_dim;
  s.value_dim = value_dim;
  return s;
}

std::unique_ptr<Implementation> load_or_fail(const std::string& path, int timeout_ms = 2000) {
  std::string error;
  PluginOptions options;
  options.timeout_ms = timeout_ms;
  auto impl = load_plugin(path, options, error);
  EXPECT_TRUE(impl) << error;
  EXPECT_TRUE(error.empty()) << error;
  return impl;
}

// The refusal message for `path`, which must name the file.
std::string refusal(const std::string& path) {
  std::string error;
  auto impl = load_plugin(path, {}, error);
  EXPECT_FALSE(impl) << path << " was loaded";
  EXPECT_NE(error.find(path), std::string::npos) << "message does not name the file: " << error;
  return error;
}

void expect_matches_oracle(const Problem& p, const Outcome& o) {
  ASSERT_EQ(o.status, CallStatus::ok) << call_status_name(o.status) << ": " << o.message;
  const Comparison c = compare_to_oracle(p, oracle(p), o.out);
  EXPECT_TRUE(c.ok) << "worst ratio " << c.worst_ratio << " at " << c.worst_index << "\n" << p.describe();
}

int open_fd_count() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

// A scratch folder for files the loader must refuse.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    char tmpl[] = "/tmp/attncheck-plugin-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& name, const std::string& bytes) const {
    const auto file = path / name;
    std::ofstream(file, std::ios::binary) << bytes;
    return file.string();
  }
};

// ---- loading ---------------------------------------------------------------

TEST(PluginLoad, ExamplePluginLoadsAndIsCorrect) {
  const std::string path = shipped_plugin("example_attention");
  auto impl = load_or_fail(path);
  ASSERT_TRUE(impl);
  EXPECT_EQ(impl->name(), "example_c");
  EXPECT_EQ(impl->source(), "plugin:" + path);
  for (DType t : {DType::f32, DType::f64})
    for (Causal c : {Causal::none, Causal::top_left, Causal::bottom_right}) {
      const Problem p = problem_of(shape(2, 2, 3, 5, 4, 3), t, c);
      expect_matches_oracle(p, impl->run(p));
    }
}

TEST(PluginLoad, ExamplePluginHonoursMaskAndEmptyRows) {
  auto impl = load_or_fail(shipped_plugin("example_attention"));
  ASSERT_TRUE(impl);
  Problem p = problem_of(shape(1, 2, 3, 4, 2, 2));
  p.mask.assign(p.shape.mask_size(), 1);
  for (int64_t j = 0; j < 4; ++j) p.mask[p.mask_at(1, 2, j)] = 0;  // head 1, row 2 sees nothing
  p.mask[p.mask_at(0, 0, 1)] = 0;
  const Outcome o = impl->run(p);
  expect_matches_oracle(p, o);
  EXPECT_EQ(o.out[p.out_at(1, 2, 0)], 0.0);
  EXPECT_EQ(o.out[p.out_at(1, 2, 1)], 0.0);
}

TEST(PluginLoad, ExamplePluginDeclinesSixteenBitTypes) {
  auto impl = load_or_fail(shipped_plugin("example_attention"));
  ASSERT_TRUE(impl);
  const Outcome o = impl->run(problem_of(shape(1, 1, 2, 2, 2, 2), DType::f16));
  EXPECT_EQ(o.status, CallStatus::unsupported) << o.message;
  EXPECT_NE(o.message.find("f32 and f64"), std::string::npos) << o.message;
}

TEST(PluginLoad, SeedLayerIsTheUnscaledFoundingLayer) {
  auto impl = load_or_fail(shipped_plugin("seed_layer"));
  ASSERT_TRUE(impl);
  EXPECT_EQ(impl->name(), "seed_layer");
  // With head_dim = 1 the missing 1/sqrt(d) is invisible: it must agree with the oracle.
  const Problem d1 = problem_of(shape(2, 1, 3, 4, 1, 2));
  expect_matches_oracle(d1, impl->run(d1));
  // With head_dim = 4 it computes attention at scale 1, where 1/2 was asked for.
  Problem d4 = problem_of(shape(1, 1, 2, 4, 4, 2));
  const Outcome o = impl->run(d4);
  ASSERT_EQ(o.status, CallStatus::ok) << o.message;
  EXPECT_FALSE(compare_to_oracle(d4, oracle(d4), o.out).ok);
  d4.scale = 1.0;
  expect_matches_oracle(d4, o);
}

TEST(PluginLoad, MissingFileIsRefused) {
  const std::string e = refusal(std::string(ATTNCHECK_TEST_PLUGIN_DIR) + "/does_not_exist.so");
  EXPECT_NE(e.find("no such file"), std::string::npos) << e;
}

TEST(PluginLoad, DirectoryIsRefused) {
  const std::string e = refusal(ATTNCHECK_TEST_PLUGIN_DIR);
  EXPECT_NE(e.find("directory"), std::string::npos) << e;
}

TEST(PluginLoad, TextFileRenamedSoIsRefused) {
  ScratchDir dir;
  const std::string e = refusal(dir.write("notes.so", "this is a text file, not a library\n"));
  EXPECT_NE(e.find("not a shared library"), std::string::npos) << e;
}

TEST(PluginLoad, ThirtyTwoBitLibraryIsRefused) {
  // The 64-byte header of an ELFCLASS32 little-endian shared object for i386:
  // enough for the loader to see the class and refuse it.
  std::string header(64, '\0');
  const unsigned char ident[] = {0x7f, 'E', 'L', 'F', 1 /* ELFCLASS32 */, 1 /* LSB */, 1 /* EV_CURRENT */};
  std::copy(std::begin(ident), std::end(ident), header.begin());
  header[16] = 3;  // e_type = ET_DYN
  header[18] = 3;  // e_machine = EM_386
  header[20] = 1;  // e_version
  ScratchDir dir;
  const std::string e = refusal(dir.write("lib32.so", header));
  EXPECT_NE(e.find("word size or architecture"), std::string::npos) << e;
  EXPECT_NE(e.find("wrong ELF class"), std::string::npos) << e;
}

TEST(PluginLoad, LibraryWithoutEntryPointIsRefused) {
  const std::string e = refusal(test_plugin("no_symbol_plugin"));
  EXPECT_NE(e.find("exports none of attncheck_plugin_v3, attncheck_plugin_v2, attncheck_plugin_v1"), std::string::npos) << e;
}

TEST(PluginLoad, NullEntryResultIsRefused) {
  const std::string e = refusal(test_plugin("null_plugin"));
  EXPECT_NE(e.find("returned NULL"), std::string::npos) << e;
}

// A refusing plugin's own reason (attncheck_plugin_load_error) ends the message.
TEST(PluginLoad, NullEntryResultCarriesThePluginsReason) {
  const std::string e = refusal(test_plugin("environment_plugin"));
  EXPECT_NE(e.find("attncheck_plugin_v1() returned NULL: ATTNCHECK_TEST_GREETING is not set"), std::string::npos) << e;
}

// PluginOptions::environment reaches the plugin's process, before it loads and on
// every restart; PluginOptions::source relabels it (check --python).
TEST(PluginLoad, EnvironmentAndSourceReachThePlugin) {
  PluginOptions options;
  options.environment = {{"ATTNCHECK_TEST_GREETING", "hello"}};
  options.source = "python:x.py:f";
  std::string error;
  auto impl = load_plugin(test_plugin("environment_plugin"), options, error);
  ASSERT_TRUE(impl) << error;
  EXPECT_EQ(impl->name(), "hello");
  EXPECT_EQ(impl->source(), "python:x.py:f");
  EXPECT_EQ(std::getenv("ATTNCHECK_TEST_GREETING"), nullptr) << "set in the plugin's process only";
  const Problem p = problem_of(shape(1, 1, 2, 3, 2, 2));
  EXPECT_EQ(impl->run(p).status, CallStatus::ok);
}

TEST(PluginLoad, OtherAbiVersionIsRefused) {
  const std::string e = refusal(test_plugin("wrong_abi_plugin"));
  EXPECT_NE(e.find("ABI version 2"), std::string::npos) << e;
  EXPECT_NE(e.find("version 1"), std::string::npos) << e;
}

TEST(PluginLoad, CrashInsideDlopenIsRefusedAndParentLives) {
  const std::string e = refusal(test_plugin("load_crash_plugin"));
  EXPECT_NE(e.find("crashed while loading"), std::string::npos) << e;
  EXPECT_NE(e.find("SIGSEGV"), std::string::npos) << e;
}

TEST(PluginLoad, RelativePathIsNotSearchedInTheLibraryPath) {
  // "crash_plugin.so" from inside its folder loads that file, not a system library of that name.
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(ATTNCHECK_TEST_PLUGIN_DIR);
  std::string error;
  auto impl = load_plugin("crash_plugin.so", {}, error);
  std::filesystem::current_path(cwd);
  ASSERT_TRUE(impl) << error;
  EXPECT_EQ(impl->source(), "plugin:crash_plugin.so");
}

// ---- process faults --------------------------------------------------------

TEST(PluginFaults, CrashIsReportedWithSignalAndHostRecovers) {
  auto impl = load_or_fail(test_plugin("crash_plugin"));
  ASSERT_TRUE(impl);
  const Problem fine = problem_of(shape(1, 2, 3, 3, 2, 2));
  expect_matches_oracle(fine, impl->run(fine));
  const Outcome crash = impl->run(problem_of(shape(1, 1, 2, 4, 2, 2)));
  EXPECT_EQ(crash.status, CallStatus::crash);
  EXPECT_EQ(crash.message, "killed by SIGSEGV (Segmentation fault)");
  expect_matches_oracle(fine, impl->run(fine));
}

TEST(PluginFaults, HangTimesOutWithinLimitAndHostRecovers) {
  const int limit_ms = 300;
  auto impl = load_or_fail(test_plugin("hang_plugin"), limit_ms);
  ASSERT_TRUE(impl);
  const auto start = std::chrono::steady_clock::now();
  const Outcome hang = impl->run(problem_of(shape(1, 1, 3, 2, 2, 2)));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  EXPECT_EQ(hang.status, CallStatus::timeout) << hang.message;
  EXPECT_EQ(hang.message.rfind("no answer within 300 ms of CPU time (--timeout-ms; used ", 0), 0u) << hang.message;
  EXPECT_GE(took.count(), limit_ms);
  // The limit is CPU time, so the call must end soon after the plugin has used
  // it, however long a busy machine took to give it that much (the wall time
  // here grows with the load; the CPU time the message reports does not).
  long used_cpu_ms = -1;
  const std::size_t used = hang.message.find("; used ");
  if (used != std::string::npos) used_cpu_ms = std::strtol(hang.message.c_str() + used + 7, nullptr, 10);
  EXPECT_GE(used_cpu_ms, limit_ms) << hang.message;
  EXPECT_LT(used_cpu_ms, limit_ms + 500) << "the limit is not enforced: " << hang.message;
  const Problem fine = problem_of(shape(1, 1, 2, 2, 2, 2));
  expect_matches_oracle(fine, impl->run(fine));
}

TEST(PluginFaults, WritePastOutIsReportedAndHostRecovers) {
  auto impl = load_or_fail(test_plugin("oob_plugin"));
  ASSERT_TRUE(impl);
  for (DType t : {DType::f32, DType::f64}) {
    const Outcome bad = impl->run(problem_of(shape(1, 1, 2, 2, 2, 3), t));
    EXPECT_EQ(bad.status, CallStatus::out_of_bounds_write) << bad.message;
    EXPECT_NE(bad.message.find("past the end of out"), std::string::npos) << bad.message;
    const Problem fine = problem_of(shape(1, 1, 2, 2, 2, 2), t);
    expect_matches_oracle(fine, impl->run(fine));
  }
}

TEST(PluginFaults, UnwrittenElementIsReportedAndHostRecovers) {
  auto impl = load_or_fail(test_plugin("unwritten_plugin"));
  ASSERT_TRUE(impl);
  const Outcome bad = impl->run(problem_of(shape(1, 2, 2, 2, 2, 2)));
  EXPECT_EQ(bad.status, CallStatus::unwritten_output) << bad.message;
  EXPECT_NE(bad.message.find("1 of 8 output elements left unwritten"), std::string::npos) << bad.message;
  const Problem fine = problem_of(shape(1, 2, 1, 2, 2, 2));
  expect_matches_oracle(fine, impl->run(fine));
}

TEST(PluginFaults, RegionGrowsForBiggerCalls) {
  auto impl = load_or_fail(shipped_plugin("example_attention"));
  ASSERT_TRUE(impl);
  const Problem small = problem_of(shape(1, 1, 1, 1, 1, 1));
  const Problem big = problem_of(shape(2, 3, 40, 70, 16, 24), DType::f64, Causal::bottom_right, 7);  // ~0.5 MB
  expect_matches_oracle(small, impl->run(small));
  expect_matches_oracle(big, impl->run(big));
  expect_matches_oracle(small, impl->run(small));
}

TEST(PluginFaults, RepeatedFaultsLeakNoFdsAndNoZombies) {
  const int fds_before = open_fd_count();
  {
    auto crash = load_or_fail(test_plugin("crash_plugin"));
    auto hang = load_or_fail(test_plugin("hang_plugin"), 50);
    ASSERT_TRUE(crash && hang);
    for (int round = 0; round < 10; ++round) {
      EXPECT_EQ(crash->run(problem_of(shape(1, 1, 1, 5, 1, 1))).status, CallStatus::crash);
      EXPECT_EQ(hang->run(problem_of(shape(1, 1, 3, 1, 1, 1))).status, CallStatus::timeout);
    }
    EXPECT_EQ(crash->run(problem_of(shape(1, 1, 1, 2, 1, 1))).status, CallStatus::ok);
  }
  for (const char* broken : {"null_plugin", "wrong_abi_plugin", "no_symbol_plugin", "load_crash_plugin"}) {
    std::string error;
    EXPECT_FALSE(load_plugin(test_plugin(broken), {}, error));
  }
  EXPECT_EQ(open_fd_count(), fds_before);
  errno = 0;
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1) << "a child is left over";
  EXPECT_EQ(errno, ECHILD);
}

}  // namespace
}  // namespace attncheck
