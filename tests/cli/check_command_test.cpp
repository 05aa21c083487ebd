// Tests of `attncheck check` as a function: exit statuses, the seed line,
// the JSON/JUnit files, and process faults charged to the process laws.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/check_command.h"
#include "run/check_implementation.h"
#include "impls/in_process.h"
#include "law_framework/law.h"
#include "report/junit_report.h"

namespace attncheck {
namespace {

struct CheckRun {
  int status;
  std::string out, err;
};

CheckRun check(CheckArgs a) {
  std::ostringstream out, err;
  const int status = run_check(a, out, err);
  return {status, out.str(), err.str()};
}

TEST(CheckCommand, RefusesUnknownNamesWithExitTwo) {
  CheckArgs a;
  a.impls = {"no_such_impl"};
  CheckRun r = check(a);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("reference"), std::string::npos) << r.err;  // lists the built-ins

  a.impls = {"reference"};
  a.laws = {"no_such_law"};
  r = check(a);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("matches_oracle"), std::string::npos) << r.err;  // lists the laws

  a.laws = {};
  a.dtype = "f8";
  EXPECT_EQ(check(a).status, 2);

  a.dtype = "all";
  a.plugins = {"/no/such/plugin.so"};
  EXPECT_EQ(check(a).status, 2);
}

// Laws renamed to the spec's names (docs/laws.md) keep their old names on the
// command line, with a note: dead_bytes_inert runs both of its halves.
TEST(CheckCommand, OldLawNamesRunTheRenamedLawsWithANote) {
  CheckArgs a;
  a.impls = {"reference"};
  a.laws = {"dead_bytes_inert"};
  a.skip_laws = {"promised_batch_invariance"};
  a.cases = 12;
  a.seed = 1;
  const CheckRun r = check(a);
  EXPECT_NE(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--law dead_bytes_inert is deprecated, now dead_page_bytes_inert, unread_table_entries_inert"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--skip-law promised_batch_invariance is deprecated, now batch_invariance"), std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("dead_page_bytes_inert       PASS 12"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unread_table_entries_inert  PASS 12"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--law dead_page_bytes_inert --law unread_table_entries_inert"), std::string::npos) << r.out;
}

TEST(CheckCommand, PassingLawExitsZeroAndPrintsTheSeed) {
  CheckArgs a;
  a.impls = {"reference"};
  a.laws = {"deterministic"};
  a.cases = 10;
  a.seed = 1234;
  const CheckRun r = check(a);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("seed: 1234\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--seed 1234"), std::string::npos) << r.out;
}

TEST(CheckCommand, CaughtFaultExitsOneAndWritesReports) {
  const std::string json = testing::TempDir() + "attncheck_cli_test.json";
  const std::string junit = testing::TempDir() + "attncheck_cli_test.xml";
  CheckArgs a;
  a.impls = {"seed_softmax_bypass"};
  a.laws = {"matches_oracle"};
  a.seed = 11;
  a.reports["json"] = json;
  a.reports["junit"] = junit;
  const CheckRun r = check(a);
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("--impl seed_softmax_bypass --law matches_oracle"), std::string::npos) << r.out;

  std::ifstream jf(json);
  const nlohmann::json j = nlohmann::json::parse(jf);
  EXPECT_EQ(j["seed"], 11);
  ASSERT_EQ(j["implementations"].size(), 1u);
  const auto& impl = j["implementations"][0];
  EXPECT_EQ(impl["name"], "seed_softmax_bypass");
  EXPECT_EQ(impl["source"], "builtin:seed_softmax_bypass");
  EXPECT_EQ(impl["verdict"], "fail");
  EXPECT_EQ(impl["laws"][0]["law"], "matches_oracle");
  EXPECT_EQ(impl["laws"][0]["status"], "fail");
  EXPECT_TRUE(impl["laws"][0].contains("message"));

  std::ifstream xf(junit);
  const std::string xml((std::istreambuf_iterator<char>(xf)), std::istreambuf_iterator<char>());
  EXPECT_NE(xml.find("<testsuite name=\"seed_softmax_bypass\" tests=\"1\" failures=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure message="), std::string::npos);
  std::remove(json.c_str());
  std::remove(junit.c_str());
}

TEST(JUnitReport, EscapesEverythingXmlForbids) {
  EXPECT_EQ(xml_escape("a<b&\"'>"), "a&lt;b&amp;&quot;&apos;&gt;");
  EXPECT_EQ(xml_escape(std::string("x\x01y\xffz")), "x?y?z");
  EXPECT_EQ(xml_escape("line\nbreak"), "line&#10;break");
  EXPECT_EQ(xml_escape("line\nbreak", false), "line\nbreak");
  EXPECT_EQ(xml_escape("caf\xc3\xa9"), "caf\xc3\xa9");  // valid UTF-8 kept
}

// Crashes on every call with more than 3 query rows, else answers correctly.
class CrashesOnLongQueries final : public Implementation {
 public:
  std::string name() const override { return "crashes_on_long_queries"; }
  std::string source() const override { return "builtin:crashes_on_long_queries"; }
  Outcome run(const Problem& p) override {
    if (p.shape.q_len > 3) return {CallStatus::crash, {}, "killed by SIGSEGV"};
    return reference_->run(p);
  }

 private:
  std::unique_ptr<Implementation> reference_ = make_builtin("reference");
};

TEST(CheckImplementation, ChargesAFaultToItsProcessLaw) {
  Target target{
      .name = "crashes_on_long_queries",
      .source = "builtin:crashes_on_long_queries",
      .loaded = std::make_unique<CrashesOnLongQueries>(),
      .reproduce = [](const std::string& law) { return "repro " + law; },
  };
  const RunSettings s{.options = {.seed = 3, .cases = 50}};
  std::vector<std::string> errors;
  const ImplementationResult r = check_implementation(target, {find_law("deterministic")}, s, errors);
  ASSERT_EQ(r.laws.size(), 2u);  // no_crash added although --law did not ask for it
  EXPECT_EQ(r.laws[1].run.law, "no_crash");
  EXPECT_TRUE(r.laws[1].failed());
  EXPECT_EQ(r.laws[1].found_while, "deterministic");
  EXPECT_EQ(r.laws[1].reproduce, "repro deterministic");
  ASSERT_TRUE(r.laws[1].run.counterexample.has_value());
  EXPECT_GT(r.laws[1].run.counterexample->shape.q_len, 3);
  EXPECT_TRUE(r.failed());
}

}  // namespace
}  // namespace attncheck
