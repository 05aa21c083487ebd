// `attncheck replay PATH [--plugin PATH]... [--impl NAME]...`: runs saved
// regression cases (casefile/case_file.h) through their laws again.
//
// PATH is one case file or a folder: every *.json directly inside it (not
// recursive; hidden files skipped), in name order. Each case runs against
// every --plugin and --impl given, or, when none is given, against the
// implementation recorded in it (history.source "builtin:NAME" or
// "plugin:PATH"). One line per case and implementation goes to `out`:
//   PASS  matches_oracle-3f2a9c0d1b7e4a55.json  matches_oracle  builtin:reference
//   FAIL  matches_oracle-3f2a9c0d1b7e4a55.json  matches_oracle  builtin:seed_unscaled  1 element(s) outside ...
//   SKIP  ...  (the law does not apply, or the implementation answered unsupported)
// then a summary line. A damaged case file, an unknown law or an
// implementation that cannot be loaded is named with the reason on `err`, and
// the other cases still run.
//
// Exit status: 2 when anything was refused (a damaged or missing file, an
// unknown law, an unloadable plugin or unknown built-in): the replay did not
// run as asked, whatever else happened; else 1 when any case failed (a crash,
// hang or bad write counts as a failure); else 0.
//
// Example usage:
//   ReplayArgs args{.path = "regression/cases", .impls = {"online"}};
//   return run_replay(args, std::cout, std::cerr);
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "plugin/plugin_host.h"

namespace attncheck {

struct ReplayArgs {
  std::string path;
  std::vector<std::string> plugins;
  std::vector<std::string> pythons;  // --python MODULE_OR_FILE:FUNCTION... (cli/python_targets.h)
  std::vector<std::string> impls;
  int timeout_ms = 2000;
  int load_timeout_ms = kDefaultLoadTimeoutMs;
  std::string memory_limit;  // empty: default_memory_limit_bytes()
};

int run_replay(const ReplayArgs& args, std::ostream& out, std::ostream& err);

}  // namespace attncheck
