// Every saved case in regression/cases/ replayed as its own test, forever:
// the three references must pass it, and a case recorded against a member of
// the bug zoo must still fail on that member (the zoo stays caught, so a law
// that is weakened until the zoo slips through turns this suite red) and
// record "expect": "fail" (what `attncheck replay` as recorded honours).
//
// Cases are read when the tests are listed (CTest discovers them before each
// run), so adopting a case is copying its file:
//   cp build/regressions/*.json regression/cases/
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "casefile/case_file.h"
#include "impls/builtins.h"
#include "impls/in_process.h"
#include "law_framework/law.h"
#include "driver/law_run.h"

#ifndef ATTNCHECK_REGRESSION_CASES_DIR
#error "ATTNCHECK_REGRESSION_CASES_DIR must name the folder of case files"
#endif

namespace attncheck {
namespace {
namespace fs = std::filesystem;

// The case files, sorted; one empty entry when there are none, so the suite
// says so instead of silently holding no tests.
std::vector<std::string> case_files() {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(ATTNCHECK_REGRESSION_CASES_DIR, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".json" && !it->path().filename().string().starts_with("."))
      files.push_back(it->path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) files.push_back("");
  return files;
}

// Test names: the file name with every non-alphanumeric character as '_'
// ("matches_oracle-3f2a.json" -> "matches_oracle_3f2a_json"), made unique.
std::vector<std::string> test_names(const std::vector<std::string>& files) {
  std::vector<std::string> names;
  std::set<std::string> taken;
  for (const std::string& f : files) {
    std::string n = f.empty() ? "no_cases" : fs::path(f).filename().string();
    for (char& c : n)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    std::string unique = n;
    for (int i = 2; taken.count(unique); ++i) unique = n + "_" + std::to_string(i);
    taken.insert(unique);
    names.push_back(unique);
  }
  return names;
}

const std::vector<std::string>& files() {
  static const std::vector<std::string> f = case_files();
  return f;
}

class RegressionCase : public testing::TestWithParam<std::string> {};

TEST_P(RegressionCase, PassesReferencesAndStillCatchesItsZooMember) {
  const std::string& path = GetParam();
  if (path.empty()) GTEST_SKIP() << "no case files in " << ATTNCHECK_REGRESSION_CASES_DIR;

  CaseRecord rec;
  try {
    rec = load_case(path);
  } catch (const CaseFileError& e) {
    FAIL() << e.what();
  }
  const Law* law = find_law(rec.law);
  ASSERT_NE(law, nullptr) << path << ": unknown law \"" << rec.law << "\"";
  SCOPED_TRACE(path + "\n" + rec.problem.header() + "\nrecorded: " + rec.source + ": " + rec.message);

  for (const BuiltinInfo& b : builtins()) {
    if (b.kind != BuiltinKind::reference) continue;
    auto impl = make_builtin(b.name);
    ASSERT_NE(impl, nullptr) << b.name;
    const Verdict v = check_case(*law, *impl, rec.problem);
    EXPECT_TRUE(v.passed()) << "reference " << b.name << " does not pass " << rec.law << ": " << v.message;
  }

  if (rec.source.starts_with("builtin:")) {
    const std::string name = rec.source.substr(8);
    const BuiltinInfo* b = find_builtin(name);
    ASSERT_NE(b, nullptr) << path << ": recorded against unknown built-in \"" << name << "\"";
    // The file says so too, so `attncheck replay` as recorded counts its failure as expected.
    EXPECT_EQ(rec.expect, b->kind == BuiltinKind::zoo ? "fail" : "pass")
        << path << ": a case recorded against " << (b->kind == BuiltinKind::zoo ? "zoo member " : "") << name
        << " must record \"expect\": \"" << (b->kind == BuiltinKind::zoo ? "fail" : "pass") << "\"";
    if (b->kind == BuiltinKind::zoo) {
      auto impl = make_builtin(name);
      const Verdict v = check_case(*law, *impl, rec.problem);
      EXPECT_TRUE(v.failed() || v.status == VerdictStatus::fault)
          << "zoo member " << name << " is no longer caught by " << rec.law << " on this case"
          << (v.message.empty() ? "" : ": ") << v.message;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, RegressionCase, testing::ValuesIn(files()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           static const std::vector<std::string> names = test_names(files());
                           return names[info.index];
                         });

}  // namespace
}  // namespace attncheck
