// `attncheck replay PATH... [--plugin PATH]... [--impl NAME]...`: runs saved
// regression cases (casefile/case_file.h) through their laws again.
//
// Each PATH is a case file or a folder: every *.json directly inside it (not
// recursive; hidden files skipped), in name order; a file named twice runs
// once. Each case runs against every --plugin and --impl given, or, when none
// is given, against the implementation recorded in it (history.source
// "builtin:NAME" or "plugin:PATH"; docs/case-files.md). A recorded relative
// plugin path is looked for from the working folder (as check was given it),
// then from the case file's own folder; in neither, the case is refused with
// both paths named and --plugin PATH suggested. A case saved by the C++ API
// ("cpp:NAME", a callable inside the user's test binary) is refused as
// recorded, with the commands that do reproduce it: its test rerun with its
// seed, or replay with --plugin / --impl. One line per case and implementation goes
// to `out`:
//   PASS  matches_oracle-3f2a9c0d1b7e4a55.json  matches_oracle  builtin:reference
//   FAIL  matches_oracle-3f2a9c0d1b7e4a55.json  matches_oracle  builtin:naive  1 element(s) outside ...
//            diagnosis: behaves like: ...       (a failure a fault model explains)
//   XFAIL  ...  (failed, as the case file records it must: "expect": "fail")
//   XPASS  ...  (the case records "expect": "fail" but passed: counted as a failure)
//   SKIP   ...  (the law does not apply, or the implementation answered unsupported)
//            reproduce: attncheck replay FILE --plugin P --timeout-ms 300   (under each failure: the
//                       command that replays it alone, with the limits given away from their defaults)
// then a summary line. A case's "expect" applies to the implementation it
// records (run as recorded, or named again by --impl / --plugin); any other
// implementation must pass it. A damaged case file, an unknown law or an
// implementation that cannot be loaded is named with the reason on `err`,
// and the other cases still run.
//
// --json, --junit, --markdown write the same reports as `check` (report/):
// one implementation per source, one entry per case file replayed.
//
// Exit status: 2 when anything was refused (a damaged or missing file, an
// unknown law, an unloadable plugin or unknown built-in) or no case file was
// found at all: the replay did not run as asked, whatever else happened; else
// 1 when any case failed unexpectedly or an expected failure passed (a crash,
// hang or bad write counts as a failure); else 0.
//
// Example usage:
//   ReplayArgs args{.paths = {"regression/cases"}, .impls = {"online"}};
//   return run_replay(args, std::cout, std::cerr);
#pragma once

#include <ostream>
#include <optional>
#include <string>
#include <vector>

#include "host/plugin_host.h"
#include "report/report_formats.h"

namespace attncheck {

struct ReplayArgs {
  std::vector<std::string> paths;  // case files and folders
  std::vector<std::string> plugins;  // PATH or NAME=PATH (cli_validation.h)
  std::vector<std::string> pythons;  // --python MODULE_OR_FILE:FUNCTION... (cli/python_targets.h)
  std::vector<std::string> impls;
  int timeout_ms = kDefaultTimeoutMs;  // CPU time of one call (host/time_limits.h)
  int wall_timeout_ms = 0;             // 0: derived from timeout_ms
  int load_timeout_ms = kDefaultLoadTimeoutMs;
  int load_wall_timeout_ms = 0;
  std::string memory_limit;  // empty: default_memory_limit_bytes()
  ReportPaths reports;       // --json FILE, --junit FILE, --markdown FILE
  std::string color = "auto";  // --color auto|always|never
  bool quiet = false;          // --quiet: only the failures and the summary
  std::string program = "attncheck";  // argv[0], for the commands it prints
  std::optional<std::string> shard;   // --shard INDEX/COUNT: this shard's case files only (cli/shard_files.h)
};

int run_replay(const ReplayArgs& args, std::ostream& out, std::ostream& err);

}  // namespace attncheck
