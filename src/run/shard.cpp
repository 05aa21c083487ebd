#include "run/shard.h"

#include <cstdlib>
#include <fstream>

#include "law_framework/process_law.h"
#include "run/law_result_wire.h"

namespace attncheck {
namespace {

// A whole number of at most 9 digits (no sign, no spaces); nullopt otherwise.
std::optional<int> whole_number(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

std::string shard_range_problem(int index, int count) {
  if (count < 1) return "COUNT must be at least 1";
  if (count > kMaxShards) return "COUNT must be at most " + std::to_string(kMaxShards);
  if (index >= count) return "INDEX counts from 0 and must be below COUNT (" + std::to_string(index) + " >= " + std::to_string(count) + ")";
  return "";
}

// One pair of variables: nullopt when neither is set.
std::optional<ShardSpec> env_pair(const EnvLookup& env, const char* index_name, const char* count_name,
                                  std::string& error) {
  const std::optional<std::string> index = env(index_name), count = env(count_name);
  if (!index && !count) return std::nullopt;
  if (!index || !count) {
    error = std::string(index ? index_name : count_name) + " is set but " + (index ? count_name : index_name) +
            " is not; set both, or neither";
    return std::nullopt;
  }
  const std::optional<int> i = whole_number(*index), n = whole_number(*count);
  if (!i || !n) {
    error = std::string(!i ? index_name : count_name) + "=" + (!i ? *index : *count) + " is not a whole number";
    return std::nullopt;
  }
  if (const std::string bad = shard_range_problem(*i, *n); !bad.empty()) {
    error = std::string(index_name) + "=" + *index + ", " + count_name + "=" + *count + ": " + bad;
    return std::nullopt;
  }
  return ShardSpec{*i, *n};
}

}  // namespace

std::optional<ShardSpec> parse_shard(std::string_view text, std::string& error) {
  const std::size_t slash = text.find('/');
  const std::optional<int> index = slash == std::string_view::npos ? std::nullopt : whole_number(text.substr(0, slash));
  const std::optional<int> count = slash == std::string_view::npos ? std::nullopt : whole_number(text.substr(slash + 1));
  if (!index || !count) {
    error = "'" + std::string(text) + "' is not INDEX/COUNT (two whole numbers, INDEX from 0 to COUNT - 1, e.g. 0/4)";
    return std::nullopt;
  }
  if (const std::string bad = shard_range_problem(*index, *count); !bad.empty()) {
    error = "'" + std::string(text) + "': " + bad;
    return std::nullopt;
  }
  return ShardSpec{*index, *count};
}

EnvLookup process_environment() {
  return [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  };
}

ShardSource shard_from_flag_or_env(const std::optional<std::string>& flag, const EnvLookup& env, std::string& error) {
  ShardSource s;
  if (const std::optional<std::string> file = env("TEST_SHARD_STATUS_FILE")) s.status_file = *file;
  if (flag) {
    s.spec = parse_shard(*flag, error);
    if (!error.empty()) error = "--shard " + error;
    s.origin = "--shard";
    return s;
  }
  const std::optional<ShardSpec> gtest = env_pair(env, "GTEST_SHARD_INDEX", "GTEST_TOTAL_SHARDS", error);
  if (!error.empty()) return s;
  const std::optional<ShardSpec> bazel = env_pair(env, "TEST_SHARD_INDEX", "TEST_TOTAL_SHARDS", error);
  if (!error.empty()) return s;
  if (gtest && bazel && (gtest->index != bazel->index || gtest->count != bazel->count)) {
    error = "GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS (" + std::to_string(gtest->index) + "/" +
            std::to_string(gtest->count) + ") and TEST_SHARD_INDEX/TEST_TOTAL_SHARDS (" +
            std::to_string(bazel->index) + "/" + std::to_string(bazel->count) + ") disagree; unset one pair";
    return s;
  }
  s.spec = gtest ? gtest : bazel;
  if (s.spec) s.origin = gtest ? "GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS" : "TEST_SHARD_INDEX/TEST_TOTAL_SHARDS";
  return s;
}

std::string touch_status_file(const ShardSource& s) {
  if (s.status_file.empty() || !s.spec) return "";
  std::ofstream touch(s.status_file, std::ios::app);
  if (!touch) return "TEST_SHARD_STATUS_FILE=" + s.status_file + " cannot be written (Bazel asks a sharded test to touch it)";
  return "";
}

std::vector<LawResult> with_skipped_laws(std::vector<LawResult> ran, const std::vector<std::string>& requested,
                                         const std::function<bool(const std::string&)>& skipped) {
  std::vector<LawResult> out;
  std::size_t next = 0;
  for (const std::string& law : requested) {
    if (!skipped(law)) {
      if (next < ran.size()) out.push_back(std::move(ran[next++]));
      continue;
    }
    LawResult l;
    l.run.law = law;
    l.run.status = LawStatus::skipped;
    l.run.skip_reason = SkipReason::by_request;
    l.run.message = "not run: --skip-law";
    out.push_back(std::move(l));
  }
  for (; next < ran.size(); ++next) out.push_back(std::move(ran[next]));
  return out;
}

ShardPlanEntry shard_plan_entry(const Target& target, const std::vector<const Law*>& laws,
                                const RunSettings& settings) {
  const FinishFacts facts = finish_facts(target, settings);
  ShardPlanEntry e;
  e.name = target.name;
  e.source = target.source;
  e.expectation = target.expectation;
  e.dtypes = facts.dtypes;
  // Every law a failure may be reproduced by: its own, or the one whose case
  // provoked a fault charged to a process law (one of these, or the probes).
  std::vector<std::string> reproduced;
  for (const Law* l : laws) {
    e.laws.push_back(l->name);
    reproduced.push_back(l->name);
    if (settings.expectations && settings.expectations->skipped(l->name)) e.skipped.push_back(l->name);
  }
  if (facts.probe_fault) {
    reproduced.push_back(facts.probe_fault->found_while);
    LawResult fault;
    fault.run.law = facts.probe_fault->found_while;
    fault.run.fault_status = facts.probe_fault->status;
    fault.run.fault_case = facts.probe_fault->call;
    fault.run.fault_message = facts.probe_fault->message;
    e.probe_fault = encode_law_result(fault);
  }
  if (target.reproduce)
    for (const std::string& law : reproduced) e.reproduce[law] = target.reproduce(law);
  // The declarations finishing consults: any law of its list, or a process
  // law a fault is charged to (added when --law left it out).
  std::vector<std::string> declared_for = e.laws;
  for (const Law& l : all_laws()) declared_for.push_back(l.name);
  for (const std::string& law : declared_for)
    if (const ExpectedFailure* d = settings.expectations ? settings.expectations->find(target.name, law) : nullptr) {
      bool seen = false;
      for (const ShardDeclared& x : e.declared) seen = seen || x.law == law;
      if (!seen) e.declared.push_back({law, d->reason, d->strict});
    }
  if (target.probes) {
    e.accepted_shapes = target.probes->shapes.describe();
    e.not_checked = target.probes->not_judged;
    for (const DroppedDType& d : target.probes->dtypes.dropped) e.probe_notes.push_back(describe(d));
  }
  return e;
}

void record_ran(ShardRecord& record, std::size_t implementation, const std::vector<std::size_t>& positions,
                const std::vector<LawResult>& results) {
  for (std::size_t i = 0; i < results.size() && i < positions.size(); ++i)
    record.ran.push_back(ShardItem{.implementation = implementation,
                                   .position = positions[i],
                                   .law = results[i].run.law,
                                   .result = encode_law_result(results[i])});
}

}  // namespace attncheck
