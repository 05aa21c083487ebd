// `attncheck replay`: what it prints for each case and implementation, and
// its exit status (0 all passed, 1 a case failed, 2 something was refused).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "casefile/case_file.h"
#include "cli/replay_command.h"
#include "impls/in_process.h"
#include "law_framework/law.h"
#include "driver/law_run.h"
#include "gen/generators.h"

namespace attncheck {
namespace {
namespace fs = std::filesystem;

struct ReplayDir {
  std::string path;
  ReplayDir() {
    path = (fs::temp_directory_path() / "attncheck_replay_XXXXXX").string();
    if (!::mkdtemp(path.data())) std::abort();
  }
  ~ReplayDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// A case the zoo's seed_unscaled (scores never divided by sqrt(d)) fails under
// matches_oracle, found by sampling, recorded as found against it.
CaseRecord caught_case() {
  const Law& law = *find_law("matches_oracle");
  auto zoo = make_builtin("seed_unscaled");
  GenOptions opts;
  opts.dtypes = {DType::f64};
  for (uint64_t seed = 1; seed < 500; ++seed) {
    const Problem p = sample_problem(opts, seed, 30);
    const Verdict v = check_case(law, *zoo, p);
    if (!v.failed()) continue;
    CaseRecord r;
    r.problem = p;
    r.law = law.name;
    r.implementation = "seed_unscaled";
    r.source = "builtin:seed_unscaled";
    r.found_by = "manual";
    r.message = v.message;
    r.seed = seed;
    return r;
  }
  ADD_FAILURE() << "no sampled case catches seed_unscaled";
  return {};
}

struct Result {
  int status;
  std::string out, err;
};

ReplayArgs args(std::string path, std::vector<std::string> impls = {}, std::vector<std::string> plugins = {}) {
  ReplayArgs a;
  a.paths = {std::move(path)};
  a.impls = std::move(impls);
  a.plugins = std::move(plugins);
  return a;
}

Result replay(const ReplayArgs& args) {
  std::ostringstream out, err;
  const int status = run_replay(args, out, err);
  return {status, out.str(), err.str()};
}

TEST(Replay, RecordedZooMemberStillFails) {
  ReplayDir dir;
  const std::string path = save_case(caught_case(), dir.path);
  const Result r = replay(args(dir.path));
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("FAIL  " + fs::path(path).filename().string() + "  matches_oracle  builtin:seed_unscaled  ", 0),
            0u)
      << r.out;
}

TEST(Replay, ReferencesPassTheSameCase) {
  ReplayDir dir;
  const std::string path = save_case(caught_case(), dir.path);
  const Result r = replay(args(path, {"reference", "naive", "online"}));
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS  "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("builtin:online"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 passed, 0 failed"), std::string::npos) << r.out;
}

TEST(Replay, DamagedFileIsNamedAndTheOthersStillRun) {
  ReplayDir dir;
  save_case(caught_case(), dir.path);
  std::ofstream(dir.path + "/broken.json") << "{\"schema_version\": 1, \"law\": ";
  const Result r = replay(args(dir.path, {"reference"}));
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(dir.path + "/broken.json: malformed or truncated JSON"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("PASS  matches_oracle-"), std::string::npos) << r.out;
}

TEST(Replay, RefusalTakesPrecedenceOverFailure) {
  ReplayDir dir;
  save_case(caught_case(), dir.path);
  CaseRecord unknown = caught_case();
  unknown.law = "no_such_law";
  save_case(unknown, dir.path);
  const Result r = replay(args(dir.path));
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("unknown law \"no_such_law\""), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("FAIL  "), std::string::npos) << r.out;
}

TEST(Replay, UnloadableImplementationsAreRefused) {
  ReplayDir dir;
  const std::string path = save_case(caught_case(), dir.path);
  EXPECT_EQ(replay(args(path, {"no_such_impl"})).status, 2);
  const Result r = replay(args(path, {}, {dir.path + "/missing.so"}));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("missing.so"), std::string::npos) << r.err;

  CaseRecord unrecorded = caught_case();
  unrecorded.source.clear();
  const std::string p2 = save_case(unrecorded, dir.path + "/b");
  const Result r2 = replay(args(p2));
  EXPECT_EQ(r2.status, 2);
  EXPECT_NE(r2.err.find("no implementation recorded"), std::string::npos) << r2.err;
}

TEST(Replay, MissingPathAndEmptyFolder) {
  ReplayDir dir;
  EXPECT_EQ(replay(args(dir.path + "/absent")).status, 2);
  // Nothing found is not a pass: a CI job replaying a folder that lost its cases says so.
  const Result r = replay(args(dir.path));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no case files"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was replayed"), std::string::npos) << r.err;
}

TEST(Replay, SeveralPathsEachFileOnce) {
  ReplayDir dir;
  const std::string path = save_case(caught_case(), dir.path);
  ReplayArgs a = args(path, {"reference"});
  a.paths = {path, dir.path, path};
  const Result r = replay(a);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("replayed 1 case file(s): 1 passed"), std::string::npos) << r.out;
}

TEST(Replay, RecordedExpectFailHoldsOnTheRecordedImplementationOnly) {
  ReplayDir dir;
  CaseRecord rec = caught_case();
  rec.expect = "fail";
  const std::string path = save_case(rec, dir.path);
  EXPECT_EQ(load_case(path).expect, "fail");
  // As recorded: seed_unscaled fails it, as the file says it must.
  Result r = replay(args(path));
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("XFAIL  ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("diagnosis: behaves like"), std::string::npos) << r.out;
  // Named again: the same expectation.
  EXPECT_EQ(replay(args(path, {"seed_unscaled"})).status, 0);
  // Any other implementation must pass it.
  r = replay(args(path, {"reference"}));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("PASS  ", 0), 0u) << r.out;
}

TEST(Replay, ExpectedFailureThatPassesFailsTheReplay) {
  ReplayDir dir;
  CaseRecord rec = caught_case();
  rec.expect = "fail";
  rec.source = "builtin:reference";  // "recorded" against an implementation that passes it
  const Result r = replay(args(save_case(rec, dir.path)));
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("XPASS  ", 0), 0u) << r.out;
}

// A case saved by the C++ API names a callable inside the user's test binary:
// replay cannot call it, and says which commands do reproduce it (issue #34).
TEST(Replay, CppCaseIsRefusedWithTheCommandsThatReproduceIt) {
  ReplayDir dir;
  CaseRecord rec = caught_case();
  rec.implementation = "MyAttention.Forward";
  rec.source = "cpp:MyAttention.Forward";
  rec.seed = 42;
  const std::string path = save_case(rec, dir.path);
  const Result r = replay(args(path));
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  for (const std::string& words : std::vector<std::string>{
           "saved by the C++ API from MyAttention.Forward",
        "ATTNCHECK_SEED=42 <test binary> --gtest_filter=MyAttention.Forward/matches_oracle",
        "attncheck replay " + path + " --plugin PATH (or --impl NAME)"})
    EXPECT_NE(r.err.find(words), std::string::npos) << words << "\n" << r.err;
  // What it suggests works: the same kernel as a built-in fails the case, the reference passes it.
  const Result zoo = replay(args(path, {"seed_unscaled"}));
  EXPECT_EQ(zoo.status, 1) << zoo.out << zoo.err;
  EXPECT_EQ(zoo.out.rfind("FAIL  ", 0), 0u) << zoo.out;
  EXPECT_EQ(replay(args(path, {"reference"})).status, 0);
}

// A failure's line is followed by the command that replays it alone; a
// built-in runs in-process, so no limit flag is repeated for it.
TEST(Replay, FailureShowsItsReproduceLine) {
  ReplayDir dir;
  const std::string path = save_case(caught_case(), dir.path);
  ReplayArgs a = args(path, {"seed_unscaled"});
  a.program = "attncheck";
  a.timeout_ms = 300;
  const Result r = replay(a);
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("\n         reproduce: attncheck replay " + path + " --impl seed_unscaled\n"), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace attncheck
