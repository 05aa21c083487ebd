// What a shard of a run (`check --shard INDEX/COUNT`, run/shard.h) records
// beside its own report, so that `attncheck merge` can rebuild the one report
// an unsharded run gives: the whole run's plan (every implementation, the laws
// it is asked, what finishing its results needs) and, for each work item this
// shard ran, the law's result exactly as check_law returned it, before the
// results of one implementation are finished together (process faults
// charged across laws, refused features, expected failures: check_implementation.h).
// Written as the JSON report's "shard" object (report/shard_json.h).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "problem/dtype.h"

namespace attncheck {

enum class Expectation;  // run_report.h

// An expected failure declared for one law of one implementation (--expect-fail, --config).
struct ShardDeclared {
  std::string law;
  std::string reason;
  bool strict = true;
};

// One implementation of the run, as every shard plans it.
struct ShardPlanEntry {
  std::string name;
  std::string source;
  Expectation expectation{};
  // Its law list in report order: the run's laws, then its own (Target::extra_laws);
  // those left out by --skip-law are in `skipped` too.
  std::vector<std::string> laws;
  std::vector<std::string> skipped;
  std::map<std::string, std::string> reproduce;  // law -> the command that reproduces its failure
  std::vector<ShardDeclared> declared;
  std::vector<DType> dtypes;         // what its laws draw from, after the probes
  std::string accepted_shapes;       // ImplementationResult::accepted_shapes
  std::vector<std::string> probe_notes;  // a note per dtype the probes dropped
  std::vector<std::string> not_checked;  // ImplementationResult::not_checked
  // The probes' process fault as an encoded LawResult (run/law_result_wire.h:
  // run.law = where it was found, run.fault_* = the fault); empty: none.
  std::string probe_fault;
};

// One (implementation, law) work item this shard ran.
struct ShardItem {
  std::size_t implementation = 0;  // index into the plan
  std::size_t position = 0;        // index into its plan entry's `laws`
  std::string law;
  std::string result;              // the encoded LawResult (run/law_result_wire.h)
};

struct ShardRecord {
  int index = 0;  // 0-based, as GTEST_SHARD_INDEX and TEST_SHARD_INDEX count
  int count = 1;
  std::string version;   // the attncheck that ran it
  std::string settings;  // every setting that decides the cases and verdicts, as flags
  bool allow_insufficient = false;
  std::size_t items = 0;  // work items of the whole run
  std::vector<ShardPlanEntry> plan;
  std::vector<ShardItem> ran;
  // Per plan entry: the --budget note when this shard's budget ran out on it; else empty.
  std::vector<std::string> budget_notes;
};

}  // namespace attncheck
