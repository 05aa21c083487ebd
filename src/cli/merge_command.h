// `attncheck merge REPORT.json...`: the JSON reports of every shard of one
// run (check --shard INDEX/COUNT, run/shard.h) made into that run's report,
// on the console and in every format check writes (--json, --junit,
// --markdown), with the verdict and exit status one unsharded run gives
// (run/shard_merge.h). Contract: docs/cli.md, "merge".
//
// Example usage (what main.cpp does after parsing the flags):
//   MergeArgs m;  m.paths = {"shard-0.json", "shard-1.json"};  m.reports["junit"] = "junit.xml";
//   int status = run_merge(m, std::cout, std::cerr);  // 0 pass, 1 a law failed, 2 refused
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "report/report_formats.h"

namespace attncheck {

struct MergeArgs {
  std::vector<std::string> paths;  // the shards' --json reports, in any order
  ReportPaths reports;             // --json FILE, --junit FILE, ...: the merged report's files
  std::string color = "auto";      // --color auto|always|never
  bool quiet = false;              // --quiet: no law table
};

// 0, 1 as an unsharded check of the same run; 2 refused: a file that cannot
// be read or is not a shard's report (named, with the problem), shards of
// different runs, a shard given twice, shards missing (named).
int run_merge(const MergeArgs& args, std::ostream& out, std::ostream& err);

}  // namespace attncheck
