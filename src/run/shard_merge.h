// `attncheck merge`: the shard reports of one run (check --shard, run/shard.h)
// made into the report an unsharded run gives. Each implementation's laws'
// results come from the shards that ran them, exactly as check_law returned
// them (report/shard_record.h), and are finished together by the same
// finish_results an unsharded run uses (check_implementation.h): a crash
// seen under a law of one shard fails no_crash even when another shard ran
// no_crash, a declared feature refused in one shard and answered in another
// fails nothing, as in one run.
//
// What a merged report takes from where (it equals one run's but for these):
// the implementations' seconds are the sums of the shards' (each shard's
// time; one run's is its own), the timestamp is the earliest shard's (when
// the first shard started), and a law's case_file is the path the shard that
// found the failure saved it to (--save-failures, on that shard's machine).
//
// Example usage:
//   std::vector<ShardFile> files = {{"s0.json", read_json_report("s0.json")}, ...};
//   if (std::string bad = shards_problem(files); !bad.empty()) ...;  // exit 2
//   RunReport merged = merge_shards(files);
#pragma once

#include <string>
#include <vector>

#include "report/run_report.h"

namespace attncheck {

struct ShardFile {
  std::string path;
  RunReport report;
};

// "" when the files are every shard of one run, once each; else what is
// wrong: a report that is not a shard's, shards of different runs (version,
// seed, settings, implementations and their laws: the first that differs,
// and the files), a shard given twice, the shards missing (named).
std::string shards_problem(const std::vector<ShardFile>& files);

// The whole run's report. Throws std::runtime_error naming the file when an
// item's result does not decode (a damaged file). Call shards_problem first.
RunReport merge_shards(const std::vector<ShardFile>& files);

}  // namespace attncheck
