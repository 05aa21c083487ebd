// Case files written to hurt the reader (issue #13): nesting deep enough to
// overflow any recursive walk, duplicate keys, a path that loops. Each is
// refused with a message naming the file and the problem, and `replay` goes
// on with the other cases. The files are in tests/casefile/hostile/.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "casefile/case_file.h"
#include "cli/replay_command.h"

#ifndef ATTNCHECK_HOSTILE_CASES_DIR
#error "ATTNCHECK_HOSTILE_CASES_DIR must name tests/casefile/hostile"
#endif

namespace attncheck {
namespace {
namespace fs = std::filesystem;

std::string hostile(const std::string& name) { return std::string(ATTNCHECK_HOSTILE_CASES_DIR) + "/" + name; }

struct ScratchDir {
  std::string path;
  ScratchDir() {
    path = (fs::temp_directory_path() / "attncheck_hostile_XXXXXX").string();
    if (!::mkdtemp(path.data())) std::abort();
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string refusal_of(const std::string& path) {
  try {
    load_case(path);
  } catch (const CaseFileError& e) {
    return e.what();
  }
  ADD_FAILURE() << path << " was accepted";
  return "";
}

// A small case every reference passes, to show the run goes on.
CaseRecord good_case() {
  CaseRecord r;
  r.problem = make_problem(DType::f64, Shape{1, 1, 1, 2, 1, 1});
  r.problem.q = {1};
  r.problem.k = {1, -1};
  r.problem.v = {0.5, 2};
  r.law = "weights_sum_to_one";
  r.source = "builtin:reference";
  r.found_by = "manual";
  return r;
}

struct Result {
  int status;
  std::string out, err;
};

Result replay(const std::string& path, int timeout_ms = 2000) {
  ReplayArgs a;
  a.paths = {path};
  a.impls = {"reference"};
  a.timeout_ms = timeout_ms;
  std::ostringstream out, err;
  const int status = run_replay(a, out, err);
  return {status, out.str(), err.str()};
}

TEST(HostileCaseFile, DeepNestingIsRefusedWithoutRecursing) {
  // 160 KB: schema_version holds an array nested 80,000 levels deep.
  const std::string e = refusal_of(hostile("deep-nesting.json"));
  EXPECT_NE(e.find("deep-nesting.json"), std::string::npos) << e;
  EXPECT_NE(e.find("nest"), std::string::npos) << e.substr(0, 400);
  EXPECT_LT(e.size(), 400u) << "the message quotes the hostile value";
}

TEST(HostileCaseFile, DeepNestingDoesNotStopTheReplayOfTheOthers) {
  ScratchDir dir;
  fs::copy_file(hostile("deep-nesting.json"), dir.path + "/a-deep.json");
  save_case(good_case(), dir.path);
  const Result r = replay(dir.path);
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("a-deep.json"), std::string::npos) << r.err.substr(0, 400);
  EXPECT_NE(r.out.find("PASS"), std::string::npos) << r.out;
}

TEST(HostileCaseFile, NestingWithinTheLimitStillParses) {
  // Strings may hold any number of brackets; only structure counts.
  CaseRecord r = good_case();
  r.message = std::string(10000, '[') + std::string(10000, '{');
  const CaseRecord back = case_from_json(case_to_json(r), "brackets.json");
  EXPECT_EQ(back.message, r.message);
}

TEST(HostileCaseFile, DuplicateKeysAreRefused) {
  const std::string e = refusal_of(hostile("duplicate-keys.json"));
  EXPECT_NE(e.find("duplicate-keys.json"), std::string::npos) << e;
  EXPECT_NE(e.find("\"law\""), std::string::npos) << e;
  EXPECT_NE(e.find("more than once"), std::string::npos) << e;
}

TEST(HostileCaseFile, SymlinkLoopIsNamedAsSuch) {
  ScratchDir dir;
  const std::string loop = dir.path + "/loop.json";
  fs::create_symlink(loop, loop);
  const Result r = replay(loop);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.find("no such file"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("symbolic links"), std::string::npos) << r.err;
}

TEST(ReplayFlags, ATimeLimitCheckRefusesIsRefusedToo) {
  ScratchDir dir;
  save_case(good_case(), dir.path);
  for (int bad : {0, -1}) {
    const Result r = replay(dir.path, bad);
    EXPECT_EQ(r.status, 2) << "--timeout-ms " << bad << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("--timeout-ms"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("PASS"), std::string::npos) << "ran anyway: " << r.out;
  }
}

}  // namespace
}  // namespace attncheck
