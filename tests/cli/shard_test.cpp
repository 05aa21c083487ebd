// Tests of sharding below the command line (run/shard.h, run/shard_merge.h,
// report/json_report_reader.h): the partition, where a shard comes from, the
// merge's refusals and its finishing across shards, the strict reader.
// End to end (every format, merged equals one run): tests/cli/shard_cli.py.
#include <gtest/gtest.h>

#include <map>

#include "law_framework/law.h"
#include "report/json_report.h"
#include "report/json_report_reader.h"
#include "run/law_result_wire.h"
#include "run/shard.h"
#include "run/shard_merge.h"

namespace attncheck {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
}

TEST(ShardPartition, ParsesIndexOverCountAndRefusesTheRest) {
  std::string error;
  const std::optional<ShardSpec> s = parse_shard("2/3", error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 3);
  for (const char* bad : {"1/", "/2", "3/3", "0/0", "a/b", "-1/2", "1", "1/2/3", " 1/2", "1/2 ", "+1/2", "0/100001",
                          "9999999999/1", ""}) {
    error.clear();
    EXPECT_FALSE(parse_shard(bad, error)) << bad;
    EXPECT_NE(error.find(std::string("'") + bad + "'"), std::string::npos) << error;
  }
}

TEST(ShardPartition, EveryItemFallsToExactlyOneShardAndShardsDifferByAtMostOne) {
  for (std::size_t items = 0; items <= 60; ++items)
    for (int count = 1; count <= 13; ++count) {
      std::vector<int> owners(items, 0), sizes(count, 0);
      for (int index = 0; index < count; ++index)
        for (std::size_t g = 0; g < items; ++g)
          if (in_shard(g, {index, count})) {
            ++owners[g];
            ++sizes[index];
          }
      for (int o : owners) EXPECT_EQ(o, 1);
      EXPECT_LE(*std::max_element(sizes.begin(), sizes.end()) - *std::min_element(sizes.begin(), sizes.end()), 1);
    }
}

TEST(ShardSource, FlagWinsThenGoogleTestThenBazel) {
  std::string error;
  const EnvLookup both = env_of({{"GTEST_SHARD_INDEX", "1"}, {"GTEST_TOTAL_SHARDS", "4"},
                                 {"TEST_SHARD_INDEX", "1"}, {"TEST_TOTAL_SHARDS", "4"}});
  ShardSource s = shard_from_flag_or_env(std::string("0/2"), both, error);
  ASSERT_TRUE(s.spec && error.empty()) << error;
  EXPECT_EQ(s.spec->count, 2);
  EXPECT_EQ(s.origin, "--shard");
  s = shard_from_flag_or_env(std::nullopt, both, error);
  ASSERT_TRUE(s.spec) << error;
  EXPECT_EQ(s.spec->index, 1);
  EXPECT_EQ(s.origin, "GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS");
  s = shard_from_flag_or_env(std::nullopt, env_of({{"TEST_SHARD_INDEX", "2"}, {"TEST_TOTAL_SHARDS", "3"},
                                                   {"TEST_SHARD_STATUS_FILE", "/tmp/x"}}), error);
  ASSERT_TRUE(s.spec) << error;
  EXPECT_EQ(s.spec->index, 2);
  EXPECT_EQ(s.status_file, "/tmp/x");
  s = shard_from_flag_or_env(std::nullopt, env_of({}), error);
  EXPECT_FALSE(s.spec);
  EXPECT_TRUE(error.empty());
}

TEST(ShardSource, BadFlagsAndVariablesAreNamed) {
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"GTEST_SHARD_INDEX", "4"}, {"GTEST_TOTAL_SHARDS", "4"}}, "GTEST_SHARD_INDEX=4"},
      {{{"GTEST_SHARD_INDEX", "x"}, {"GTEST_TOTAL_SHARDS", "4"}}, "GTEST_SHARD_INDEX=x is not a whole number"},
      {{{"GTEST_SHARD_INDEX", "0"}, {"GTEST_TOTAL_SHARDS", "0"}}, "COUNT must be at least 1"},
      {{{"TEST_SHARD_INDEX", "0"}}, "TEST_SHARD_INDEX is set but TEST_TOTAL_SHARDS is not"},
      {{{"GTEST_TOTAL_SHARDS", "3"}}, "GTEST_TOTAL_SHARDS is set but GTEST_SHARD_INDEX is not"},
      {{{"GTEST_SHARD_INDEX", "0"}, {"GTEST_TOTAL_SHARDS", "2"}, {"TEST_SHARD_INDEX", "1"}, {"TEST_TOTAL_SHARDS", "2"}},
       "disagree"},
  };
  for (const auto& [vars, words] : cases) {
    std::string error;
    shard_from_flag_or_env(std::nullopt, env_of(vars), error);
    EXPECT_NE(error.find(words), std::string::npos) << words << " | " << error;
  }
  std::string error;
  shard_from_flag_or_env(std::string("1/"), env_of({}), error);
  EXPECT_NE(error.find("--shard '1/'"), std::string::npos) << error;
}

TEST(ShardResults, SkippedLawsGoBackInTheirPlaces) {
  std::vector<LawResult> ran(2);
  ran[0].run.law = "a";
  ran[1].run.law = "c";
  const std::vector<LawResult> all =
      with_skipped_laws(ran, {"a", "b", "c"}, [](const std::string& l) { return l == "b"; });
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1].run.law, "b");
  EXPECT_EQ(all[1].run.status, LawStatus::skipped);
  EXPECT_EQ(all[1].run.skip_reason, SkipReason::by_request);
  EXPECT_EQ(all[2].run.law, "c");
}

// Two shards of one run of implementation "x" with laws matches_oracle and
// no_crash: shard 0 ran matches_oracle (which saw a crash), shard 1 no_crash
// (which passed on its own cases).
std::vector<ShardFile> two_shards() {
  LawResult seen;
  seen.run.law = "matches_oracle";
  seen.run.status = LawStatus::pass;
  seen.run.cases = seen.run.judged = 30;
  seen.run.fault_status = CallStatus::crash;
  seen.run.fault_case = make_problem(DType::f32, {1, 1, 2, 3, 4, 4}, Causal::none, 0.5);
  seen.run.fault_message = "crash: killed by SIGSEGV";
  LawResult own;
  own.run.law = "no_crash";
  own.run.status = LawStatus::pass;
  own.run.cases = own.run.judged = 30;
  std::vector<ShardFile> files;
  for (int i = 0; i < 2; ++i) {
    ShardRecord s{.index = i, .count = 2, .version = "9", .settings = "--impl x", .items = 2};
    s.plan.push_back(ShardPlanEntry{.name = "x", .source = "builtin:x", .laws = {"matches_oracle", "no_crash"},
                                    .reproduce = {{"matches_oracle", "repro mo"}, {"no_crash", "repro nc"}},
                                    .dtypes = {DType::f32}});
    s.budget_notes = {""};
    s.ran.push_back(ShardItem{.implementation = 0, .position = std::size_t(i), .law = i ? "no_crash" : "matches_oracle",
                              .result = encode_law_result(i ? own : seen)});
    RunReport r;
    r.seed = 11;
    r.shard = s;
    files.push_back({"s" + std::to_string(i) + ".json", r});
  }
  return files;
}

TEST(ShardMerge, AFaultSeenInOneShardFailsTheProcessLawAnotherShardRan) {
  const std::vector<ShardFile> files = two_shards();
  ASSERT_EQ(shards_problem(files), "");
  const RunReport merged = merge_shards(files);
  ASSERT_EQ(merged.implementations.size(), 1u);
  const ImplementationResult& x = merged.implementations[0];
  ASSERT_EQ(x.laws.size(), 2u);
  EXPECT_EQ(x.laws[0].run.status, LawStatus::pass);
  EXPECT_EQ(x.laws[1].run.law, "no_crash");
  EXPECT_EQ(x.laws[1].run.status, LawStatus::fail);
  EXPECT_EQ(x.laws[1].found_while, "matches_oracle");
  EXPECT_EQ(x.laws[1].reproduce, "repro mo");
  ASSERT_TRUE(x.laws[1].run.counterexample);
  EXPECT_EQ(x.laws[1].run.counterexample->shape.kv_len, 3);
  EXPECT_EQ(merged.seed, 11u);
}

TEST(ShardMerge, RefusesMissingDoubledForeignAndOtherRunsShards) {
  std::vector<ShardFile> files = two_shards();
  EXPECT_NE(shards_problem({files[0]}).find("missing shard(s) 1/2"), std::string::npos);
  EXPECT_NE(shards_problem({files[0], files[1], files[1]}).find("shard 1/2 is given twice: s1.json and s1.json"),
            std::string::npos);
  auto differs = [&](auto change, const std::string& words) {
    std::vector<ShardFile> f = two_shards();
    change(f[1]);
    const std::string why = shards_problem(f);
    EXPECT_NE(why.find("s0.json and s1.json are shards of different runs"), std::string::npos) << why;
    EXPECT_NE(why.find(words), std::string::npos) << why;
  };
  differs([](ShardFile& f) { f.report.seed = 12; }, "seed (11 and 12)");
  differs([](ShardFile& f) { f.report.shard->version = "10"; }, "attncheck version (9 and 10)");
  differs([](ShardFile& f) { f.report.shard->settings = "--impl y"; }, "settings");
  differs([](ShardFile& f) { f.report.shard->plan[0].laws.push_back("deterministic"); }, "implementation 0 (x and x");
  differs([](ShardFile& f) { f.report.shard->plan[0].name = "y"; }, "implementation 0 (x and y");
  differs([](ShardFile& f) { f.report.shard->count = 3; }, "shard count (2 and 3)");
  files[1].report.shard.reset();
  EXPECT_NE(shards_problem(files).find("s1.json is not a shard's report"), std::string::npos);
  std::vector<ShardFile> damaged = two_shards();
  damaged[1].report.shard->ran[0].result.pop_back();
  EXPECT_THROW(merge_shards(damaged), std::runtime_error);
}

RunReport sample_report() {
  RunReport r;
  r.seed = 42;
  r.timestamp = "2026-12-06T12:00:00";
  r.profile = "small";
  ImplementationResult i;
  i.name = "mine";
  i.source = "plugin:/x.so";
  i.dtypes = {DType::f32, DType::bf16};
  i.notes = {"f16 dropped"};
  i.seconds = 1.5;
  LawResult pass;
  pass.run.law = "matches_oracle";
  pass.run.cases = 100;
  pass.run.judged = 90;
  pass.run.features = 1;
  LawResult fail;
  fail.run.law = "no_crash";
  fail.run.status = LawStatus::fail;
  fail.run.message = "crash";
  fail.run.shrink_steps = 3;
  fail.reproduce = "attncheck check ...";
  fail.found_while = "matches_oracle";
  fail.case_file = "cases/no_crash-1.json";
  LawResult xfail = fail;
  xfail.run.law = "deterministic";
  xfail.expected_failure = "upstream";
  i.laws = {pass, fail, xfail};
  r.implementations = {i};
  return r;
}

TEST(JsonReportReader, ReadsBackWhatTheWriterWrote) {
  RunReport r = sample_report();
  r.shard = two_shards()[0].report.shard;
  const nlohmann::ordered_json written = report_to_json(r);
  const RunReport back = report_from_json(nlohmann::json::parse(written.dump()), "r.json");
  EXPECT_EQ(report_to_json(back).dump(), written.dump());
  ASSERT_TRUE(back.shard);
  EXPECT_EQ(back.shard->ran[0].result, r.shard->ran[0].result);
}

TEST(JsonReportReader, RefusesWhatTheWriterNeverWrites) {
  const nlohmann::json good = nlohmann::json::parse(report_to_json(sample_report()).dump());
  auto refused = [&](auto change, const std::string& words) {
    nlohmann::json j = good;
    change(j);
    try {
      report_from_json(j, "r.json");
      ADD_FAILURE() << "accepted: " << words;
    } catch (const ReportReadError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused([](nlohmann::json& j) { j["implementations"][0]["laws"][0]["status"] = "passed"; },
          "r.json: implementations[0].laws[0].status: \"passed\" is not one of");
  refused([](nlohmann::json& j) { j["implementations"][0]["laws"][0]["colour"] = 1; },
          "implementations[0].laws[0].colour: is not a field");
  refused([](nlohmann::json& j) { j["implementations"][0]["verdict"] = "pass"; }, "disagrees with the laws");
  refused([](nlohmann::json& j) { j["implementations"][0]["judged"] = 7; }, "is not the sum");
  refused([](nlohmann::json& j) { j["seed"] = -1; }, "seed: must be a whole number");
  refused([](nlohmann::json& j) { j.erase("profile"); }, "profile: missing");
  refused([](nlohmann::json& j) { j["implementations"][0]["dtypes"] = {"f8"}; }, "\"f8\" is not a dtype");
  refused([](nlohmann::json& j) { j["implementations"][0]["laws"][2]["status"] = "fail"; }, "not one of");
}

}  // namespace
}  // namespace attncheck
