// `check --shard INDEX/COUNT`: one run's (implementation, law) work items
// split over COUNT processes or machines, as GoogleTest's and Bazel's test
// sharding split tests (GTEST_SHARD_INDEX / GTEST_TOTAL_SHARDS,
// TEST_SHARD_INDEX / TEST_TOTAL_SHARDS; INDEX counts from 0).
//
// The partition: the run's work items in report order (implementation by
// implementation, each one's laws in its report's order; laws left out by
// --skip-law are not work) are numbered 0..W-1, and item g belongs to shard
// g % COUNT. Shards differ by at most one item whatever the laws, and one
// implementation's laws spread over the shards. Which shard runs an item
// changes nothing it finds: each law runs from law_seed(run seed, law)
// (check_implementation.h) whichever shard, worker or order runs it, and a
// built-in gets a new instance per law. (A plugin that keeps state between
// calls can answer differently, as under --jobs: parallel_check.h.)
//
// Each shard writes its own report of the items it ran, and in its JSON what
// `attncheck merge` needs to rebuild the whole run's report
// (report/shard_record.h, run/shard_merge.h).
//
// Example usage:
//   std::string error;
//   const ShardSource s = shard_from_flag_or_env(flag, getenv_text, error);  // --shard 1/4, or the environment
//   if (!error.empty()) ...;  // exit 2
//   if (s.spec && in_shard(g, *s.spec)) ...;  // work item g is this shard's
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/run_report.h"
#include "run/check_implementation.h"

namespace attncheck {

struct ShardSpec {
  int index = 0;  // 0 .. count - 1
  int count = 1;
};

// More shards than this is a typo (a CI matrix of a million jobs is not).
inline constexpr int kMaxShards = 100000;

// "INDEX/COUNT" (two whole numbers, 0 <= INDEX < COUNT <= kMaxShards);
// nullopt and `error` ("'1/' is not INDEX/COUNT ...", without the flag's name) when not.
std::optional<ShardSpec> parse_shard(std::string_view text, std::string& error);

// Where a run's shard comes from, and which one.
struct ShardSource {
  std::optional<ShardSpec> spec;  // unset: the run is not sharded
  std::string origin;             // "--shard", "GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS", "TEST_SHARD_INDEX/TEST_TOTAL_SHARDS"
  std::string status_file;        // TEST_SHARD_STATUS_FILE (Bazel): touch it when set
};

// The environment as text: nullopt for a variable that is unset or empty.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
EnvLookup process_environment();

// --shard wins over the environment; else GoogleTest's pair, else Bazel's
// (both set: they must agree). A pair half set, a value that is not a whole
// number, INDEX >= COUNT or COUNT 0 set `error`, naming the flag or the
// variables (exit 2).
ShardSource shard_from_flag_or_env(const std::optional<std::string>& flag, const EnvLookup& env, std::string& error);

// Bazel: a test that shards touches TEST_SHARD_STATUS_FILE. "" when done (or
// nothing to touch), else why not.
std::string touch_status_file(const ShardSource& s);

// Whether work item `g` (0-based, in report order) is this shard's.
inline bool in_shard(std::size_t g, const ShardSpec& s) { return g % static_cast<std::size_t>(s.count) == static_cast<std::size_t>(s.index); }

// The laws' results of one implementation in its report's order: those that
// ran (`ran`, in order) with the laws left out by --skip-law put back in
// their places of `requested`, skipped ("not run: --skip-law"); what is left
// of `ran` after `requested` follows.
std::vector<LawResult> with_skipped_laws(std::vector<LawResult> ran, const std::vector<std::string>& requested,
                                         const std::function<bool(const std::string&)>& skipped);

// One implementation of the run as a shard plans it (report/shard_record.h):
// `laws` its report's law list, the skipped included.
ShardPlanEntry shard_plan_entry(const Target& target, const std::vector<const Law*>& laws,
                                const RunSettings& settings);

// Records, for the merge, the results of a shard's items of plan entry
// `implementation` (`positions[i]`: the place of results[i] in its law list).
void record_ran(ShardRecord& record, std::size_t implementation, const std::vector<std::size_t>& positions,
                const std::vector<LawResult>& results);

}  // namespace attncheck
