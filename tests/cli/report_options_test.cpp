// The small decisions behind issue #16's flags, tested as functions:
// --expect-fail parsing and scoping, the config file, --plugin NAME=PATH,
// ATTNCHECK_SEED, when colour and the progress line appear, Markdown cells,
// and how an expected failure changes a law's and an implementation's verdict.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "cli/cli_validation.h"
#include "run/expectations.h"
#include "cli/progress_line.h"
#include "cli/terminal_mode.h"
#include "report/console_report.h"
#include "report/junit_report.h"
#include "report/markdown_report.h"
#include "report/run_report.h"

namespace attncheck {
namespace {

TEST(ExpectFail, ParsesLawImplementationAndReason) {
  Expectations e;
  std::string error;
  ASSERT_TRUE(add_expect_fail("matches_oracle", e, error)) << error;
  ASSERT_TRUE(add_expect_fail("torch/fully_masked_rows_zero:https://github.com/pytorch/pytorch/issues/1", e, error));
  EXPECT_EQ(e.expect_fail[0].implementation, "");
  EXPECT_EQ(e.expect_fail[0].reason, "");
  EXPECT_EQ(e.expect_fail[1].implementation, "torch");
  EXPECT_EQ(e.expect_fail[1].law, "fully_masked_rows_zero");
  EXPECT_EQ(e.expect_fail[1].reason, "https://github.com/pytorch/pytorch/issues/1");  // ':' and '/' kept
  // Scoping: a bare law is every implementation's, IMPL/ only that one's.
  EXPECT_EQ(e.expected_failure("anyone", "matches_oracle"), std::optional<std::string>(""));
  EXPECT_TRUE(e.expected_failure("torch", "fully_masked_rows_zero").has_value());
  EXPECT_FALSE(e.expected_failure("naive", "fully_masked_rows_zero").has_value());
  for (const char* bad : {"", "/matches_oracle", "torch/", ":reason"}) {
    Expectations x;
    EXPECT_FALSE(add_expect_fail(bad, x, error)) << bad;
    EXPECT_NE(error.find("LAW[:REASON]"), std::string::npos) << error;
  }
}

TEST(ExpectFail, UnknownLawsAndImplementationsAreNamed) {
  Expectations e;
  std::string error;
  ASSERT_TRUE(add_expect_fail("nobody/matches_oracle", e, error));
  EXPECT_EQ(expectations_problem(e, {}), "");  // implementations not known yet: not checked
  EXPECT_NE(expectations_problem(e, {"reference"}).find("'nobody'"), std::string::npos);
  e.skip_laws = {"no_such_law"};
  EXPECT_NE(expectations_problem(e, {}).find("--skip-law: unknown law 'no_such_law'"), std::string::npos);
}

TEST(ExpectationsConfig, ReadsBothKeysAndRefusesTypos) {
  const std::string path = (std::filesystem::temp_directory_path() / "attncheck_expectations_test.json").string();
  std::ofstream(path) << R"({"skip_law": ["nan_propagates"],
    "expect_fail": [{"law": "matches_oracle", "implementation": "t", "reason": "upstream"}, {"law": "deterministic"}]})";
  Expectations e;
  std::string error;
  ASSERT_TRUE(load_expectations_config(path, e, error)) << error;
  EXPECT_TRUE(e.skipped("nan_propagates"));
  EXPECT_EQ(e.expected_failure("t", "matches_oracle"), std::optional<std::string>("upstream"));
  EXPECT_TRUE(e.expected_failure("u", "deterministic").has_value());
  EXPECT_EQ(expectations_problem(e, {"t"}), "");
  EXPECT_TRUE(e.find("t", "matches_oracle")->strict);  // strict unless it says otherwise
  std::ofstream(path) << R"({"expect_fail": [{"law": "matches_oracle", "strict": false}]})";
  Expectations lenient;
  ASSERT_TRUE(load_expectations_config(path, lenient, error)) << error;
  ASSERT_NE(lenient.find("x", "matches_oracle"), nullptr);
  EXPECT_FALSE(lenient.find("x", "matches_oracle")->strict);
  EXPECT_EQ(lenient.find("x", "deterministic"), nullptr);
  std::ofstream(path) << R"({"expect_fail": [{"law": "matches_oracle", "reson": "typo"}]})";
  Expectations f;
  EXPECT_FALSE(load_expectations_config(path, f, error));
  EXPECT_NE(error.find("expect_fail[0]: unknown key \"reson\""), std::string::npos) << error;
  std::filesystem::remove(path);
}

TEST(PluginLabel, NameEqualsPathUnlessThePathExists) {
  EXPECT_EQ(split_plugin_arg("mine=./libmine.so").label, "mine");
  EXPECT_EQ(split_plugin_arg("mine=./libmine.so").path, "./libmine.so");
  EXPECT_EQ(split_plugin_arg("./libmine.so").label, "");
  EXPECT_EQ(split_plugin_arg("dir/a=b.so").label, "");  // '/' before '=': a path
  EXPECT_EQ(split_plugin_arg("=x.so").path, "=x.so");
  const std::string odd = (std::filesystem::temp_directory_path() / "a=b.so").string();
  std::ofstream(odd) << "";
  EXPECT_EQ(split_plugin_arg(odd).path, odd);  // an existing file is a path whatever its name
  std::filesystem::remove(odd);
}

TEST(SeedFromEnv, FlagWinsThenTheEnvironment) {
  bool from_env = true;
  std::string error;
  ::unsetenv("ATTNCHECK_SEED");
  EXPECT_FALSE(seed_from_flag_or_env(std::nullopt, from_env, error).has_value());
  ::setenv("ATTNCHECK_SEED", "77", 1);
  EXPECT_EQ(seed_from_flag_or_env(std::nullopt, from_env, error), std::optional<uint64_t>(77));
  EXPECT_TRUE(from_env);
  EXPECT_EQ(seed_from_flag_or_env(5, from_env, error), std::optional<uint64_t>(5));
  EXPECT_FALSE(from_env);
  ::setenv("ATTNCHECK_SEED", "-1", 1);
  EXPECT_FALSE(seed_from_flag_or_env(std::nullopt, from_env, error).has_value());
  EXPECT_NE(error.find("ATTNCHECK_SEED='-1' is not a seed"), std::string::npos) << error;
  ::setenv("ATTNCHECK_SEED", "abc", 1);  // not seed 0
  error.clear();
  EXPECT_FALSE(seed_from_flag_or_env(std::nullopt, from_env, error).has_value());
  EXPECT_NE(error.find("ATTNCHECK_SEED='abc' is not a seed"), std::string::npos) << error;
  EXPECT_EQ(seed_from_flag_or_env(9, from_env, error), std::optional<uint64_t>(9));  // --seed wins, unread
  ::unsetenv("ATTNCHECK_SEED");
}

TEST(TerminalMode, ColourAndProgressOnlyWhereAPersonWatches) {
  std::string error;
  auto mode = [&](TerminalFacts f, const char* color = "auto", bool quiet = false) {
    return *terminal_mode(f, color, quiet, error);
  };
  const TerminalFacts tty{true, true, false, false};
  EXPECT_TRUE(mode(tty).colour);
  EXPECT_TRUE(mode(tty).progress);
  TerminalFacts f = tty;
  f.no_color = true;
  EXPECT_FALSE(mode(f).colour);
  EXPECT_TRUE(mode(f).progress);
  EXPECT_TRUE(mode(f, "always").colour);
  f = tty;
  f.ci = true;
  EXPECT_FALSE(mode(f).colour);
  EXPECT_FALSE(mode(f).progress);
  EXPECT_FALSE(mode(tty, "never").colour);
  EXPECT_FALSE(mode(tty, "auto", true).progress);
  EXPECT_FALSE(mode(TerminalFacts{}).colour);  // piped
  EXPECT_FALSE(mode(TerminalFacts{}).progress);
  EXPECT_FALSE(terminal_mode(tty, "yes", false, error).has_value());
  EXPECT_NE(error.find("auto, always or never"), std::string::npos);
}

TEST(ProgressLine, SaysWhereItIsAndWhatIsLeft) {
  std::ostringstream err;
  ProgressLine p(err, true, 4);
  p.working_on("naive", "matches_oracle");
  const std::string before = p.text();
  EXPECT_NE(before.find("[0/4] naive: matches_oracle (0 s)  0 cases judged"), std::string::npos) << before;
  EXPECT_EQ(before.find("left"), std::string::npos) << before;  // nothing to estimate from yet
  p.finished_one(100);
  EXPECT_NE(p.text().find("[1/4]"), std::string::npos);
  EXPECT_NE(p.text().find("100 cases judged"), std::string::npos);
  EXPECT_NE(p.text().find("s left"), std::string::npos) << p.text();
  p.clear();
  EXPECT_EQ(err.str().rfind("\r\033[K"), err.str().size() - 4);  // the line ends erased
  std::ostringstream none;
  ProgressLine off(none, false, 4);
  off.working_on("a", "b");
  off.finished_one(1);
  EXPECT_EQ(none.str(), "");
}

// Issue #34: the line names what runs now on every worker (slot), counts the
// cases of laws still running, and a tick redraws only a line that shows.
TEST(ProgressLine, NamesWhatRunsAndCountsCasesOfRunningLaws) {
  std::ostringstream err;
  ProgressLine p(err, true, 3);
  p.working_on(0, "naive", "matches_oracle");
  p.working_on(1, "naive", "deterministic");
  p.advanced(0, 30);
  p.advanced(1, 12);
  std::string t = p.text();
  EXPECT_NE(t.find("[0/3] naive: matches_oracle (0 s), naive: deterministic (0 s)  42 cases judged"), std::string::npos)
      << t;
  p.finished(0, 100);
  p.working_on(0, "naive", "scale_invariance");
  t = p.text();
  EXPECT_EQ(t.find("matches_oracle"), std::string::npos) << t;  // finished: no longer named
  EXPECT_NE(t.find("[1/3] naive: scale_invariance (0 s), naive: deterministic (0 s)  112 cases judged"),  // by worker
            std::string::npos) << t;
  // Too narrow for both: a count and the oldest.
  t = p.text(60);
  EXPECT_NE(t.find("[1/3] 2 running, the oldest naive: deterministic (0 s)  112 cases judged"), std::string::npos) << t;
  p.clear();
  const std::size_t cleared = err.str().size();
  p.tick();  // hidden for printing: the clock does not draw it back
  EXPECT_EQ(err.str().size(), cleared);
  p.advanced(1, 13);  // the next event does
  EXPECT_GT(err.str().size(), cleared);
  const std::size_t shown = err.str().size();
  p.tick();  // a line that shows is redrawn, whatever the rate limit
  EXPECT_GT(err.str().size(), shown);
}

TEST(MarkdownCell, EscapesWhatWouldBreakATable) {
  EXPECT_EQ(markdown_cell("a|b\nc_d <x>"), "a\\|b c\\_d \\<x\\>");
}

LawResult law(const char* name, LawStatus s) {
  LawResult l;
  l.run.law = name;
  l.run.status = s;
  l.run.judged = 3;
  l.run.cases = 3;
  l.run.message = s == LawStatus::fail ? "broke" : "";
  return l;
}

TEST(ExpectedFailure, ChangesTheStatusNotTheMeaningOfFail) {
  ImplementationResult i;
  i.name = "x";
  i.laws = {law("matches_oracle", LawStatus::fail), law("weights_sum_to_one", LawStatus::pass)};
  EXPECT_TRUE(i.failed());
  EXPECT_EQ(i.laws[0].status_name(), "fail");
  i.laws[0].expected_failure = "upstream";
  EXPECT_FALSE(i.failed());
  EXPECT_EQ(i.laws[0].status_name(), "expected_fail");
  i.laws[1].expected_failure = "";
  EXPECT_TRUE(i.failed());
  EXPECT_EQ(i.laws[1].status_name(), "unexpected_pass");
  RunReport r;
  r.implementations = {i};
  const std::string xml = report_to_junit(r);
  EXPECT_NE(xml.find("<skipped message=\"expected failure (upstream): broke\" type=\"expected_fail\"/>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("type=\"unexpected_pass\""), std::string::npos) << xml;
  EXPECT_EQ(xml.find("<testsuites name=\"attncheck\" tests=\"2\" failures=\"1\" errors=\"0\" time=\"0.000\">"),
            xml.find("<testsuites"))
      << xml;
}

// The legend (names too long for column headers): a name of the legend's
// full width is still apart from its source ("nondeterministic_orderbuiltin:" was printed).
TEST(ConsoleLegend, NameAndSourceStayApart) {
  RunReport r;
  for (const char* name : {"nondeterministic_order", "seed_softmax_bypass", "no_max_subtraction", "causal_off_by_one",
                           "batch_head_swapped", "last_key_dropped"}) {
    ImplementationResult i;
    i.name = name;
    i.source = std::string("builtin:") + name;
    i.laws = {law("matches_oracle", LawStatus::pass)};
    r.implementations.push_back(i);
  }
  std::ostringstream out;
  print_law_table(r, out);
  EXPECT_NE(out.str().find("nondeterministic_order builtin:nondeterministic_order"), std::string::npos) << out.str();
}

TEST(ConsoleColour, OnlyTheVerdictWordIsColouredAndColumnsStayAligned) {
  RunReport r;
  ImplementationResult i;
  i.name = "x";
  i.laws = {law("matches_oracle", LawStatus::fail), law("weights_sum_to_one", LawStatus::pass)};
  i.laws[0].expected_failure = "known";
  r.implementations = {i};
  std::ostringstream plain, coloured;
  print_law_table(r, plain);
  print_law_table(r, coloured, ConsoleStyle{true});
  EXPECT_EQ(plain.str().find("\033["), std::string::npos);
  EXPECT_NE(coloured.str().find("\033[33mXFAIL\033[0m 3"), std::string::npos) << coloured.str();
  EXPECT_NE(coloured.str().find("\033[32mPASS\033[0m 3"), std::string::npos) << coloured.str();
  std::string stripped = coloured.str();
  for (std::size_t at; (at = stripped.find("\033[")) != std::string::npos;)
    stripped.erase(at, stripped.find('m', at) - at + 1);
  EXPECT_EQ(stripped, plain.str());
}

}  // namespace
}  // namespace attncheck
