// `attncheck check`: runs the law catalogue against chosen implementations
// (or, with none chosen, the embedded default: every built-in, see
// default_run.h) and reports on the console, and optionally as JSON, JUnit XML
// and saved regression cases. Contract: docs/cli.md.
//
// Example usage (what main.cpp does after parsing the flags):
//   CheckArgs a;  a.impls = {"naive"};  a.seed = 42;
//   int status = run_check(a, std::cout, std::cerr);  // 0 pass, 1 a law failed, 2 could not run
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "run/parallel_check.h"
#include "run/shape_flags.h"
#include "host/plugin_host.h"
#include "report/report_formats.h"

namespace attncheck {

// Generated cases per law: enough for the judged floor (kDefaultMinJudged) with
// room for refusals, while a whole check of one plugin in its child process
// stays well under the contract's 30 s (docs/speed.md has the measured
// times and the command that measures them). The C++ API's Options has the
// same defaults (CheckApi.OptionsHaveTheCommandLinesDefaults).
inline constexpr int kDefaultCases = 100;
// Shrinking a failure stops after this long (wall time, per law) and keeps the
// smallest case so far; --shrink-seconds changes it. A slower or busier machine
// may stop earlier in the same search, so the shrunk case of a failure whose
// shrinking reaches the limit can differ between machines: a larger limit
// gives the same shrunk case everywhere (the verdict never depends on it).
inline constexpr double kShrinkSecondsPerLaw = 10;

struct CheckArgs {
  std::vector<std::string> plugins;    // --plugin PATH... or NAME=PATH (NAME: its name in the reports)
  std::vector<std::string> impls;      // --impl NAME...
  std::vector<std::string> pythons;    // --python MODULE_OR_FILE:FUNCTION... (cli/python_targets.h)
  std::vector<std::string> laws;       // --law NAME...; empty: every law
  std::vector<std::string> skip_laws;  // --skip-law NAME...: reported skipped, not run
  std::vector<std::string> expect_fail;  // --expect-fail [IMPL/]LAW[:REASON]... (run/expectations.h)
  std::string config;                  // --config FILE: skip_law and expect_fail from a JSON file
  std::string dtype = "all";           // --dtype f32|f64|f16|bf16|all (or a comma list)
  int cases = kDefaultCases;           // --cases N
  double shrink_seconds = kShrinkSecondsPerLaw;  // --shrink-seconds S: shrinking time per failing law
  std::optional<uint64_t> seed;        // --seed N; else ATTNCHECK_SEED; else a fresh one
  int timeout_ms = kDefaultTimeoutMs;  // --timeout-ms N: CPU time of one plugin call (host/time_limits.h)
  int wall_timeout_ms = 0;             // --wall-timeout-ms N: wall-clock time of one call; 0: derived
  ShapeFlags shapes;                   // --profile, --head-dim, --q-len, --kv-len, --batch, --heads
  int min_judged = kDefaultMinJudged;  // --min-judged N: fewer judged cases is `insufficient`
  bool allow_insufficient = false;     // --allow-insufficient: an insufficient law does not fail the run
  int load_timeout_ms = kDefaultLoadTimeoutMs;  // --load-timeout-ms N: CPU time of loading a plugin, each restart
  int load_wall_timeout_ms = 0;        // --load-wall-timeout-ms N: wall-clock time of loading; 0: derived
  std::string memory_limit;            // --memory-limit SIZE; empty: default_memory_limit_bytes()
  double budget_seconds = 0;           // --budget SECONDS: bound on the whole run; 0: none
  int jobs = default_jobs();           // --jobs N: worker processes (parallel_check.h); default the core count
  ReportPaths reports;                 // --json FILE, --junit FILE, ...: one per row of report_formats()
  std::string save_failures_dir;       // --save-failures DIR
  std::string program = "attncheck";   // argv[0], for the commands it prints
  std::string color = "auto";          // --color auto|always|never (cli/terminal_mode.h)
  bool quiet = false;                  // --quiet
  // --shard INDEX/COUNT (run/shard.h): run only this shard's work items;
  // unset: GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS or TEST_SHARD_INDEX/TEST_TOTAL_SHARDS when set.
  std::optional<std::string> shard;
  std::string version = "unknown";     // attncheck's version, recorded in a shard's report
};

// Returns the exit status: 0 every law passed (or was skipped) for every
// implementation -- in the default run: every expectation held; 1 a law
// failed (a crash, hang or bad write counts) -- in the default run: an
// expectation broke; 2 the command could not run as asked.
int run_check(const CheckArgs& args, std::ostream& out, std::ostream& err);

// What `check` prints and writes once its laws ran, and `merge` for the merged
// report: the law table (on `chatter`: discarded under --quiet), the
// failures, the notes, the verdict, the seed, each report file of `reports`;
// then the exit status (0, 1; 2 with `errors`, each printed after "attncheck
// COMMAND: "). A shard's report (report.shard) says which shard it is
// instead of a verdict on the run.
int report_run(const RunReport& report, const ReportPaths& reports, bool colour, const std::string& command,
               std::vector<std::string>& errors, std::ostream& chatter, std::ostream& out, std::ostream& err);

}  // namespace attncheck
