#include "cli/merge_command.h"

#include <filesystem>
#include <sstream>

#include "cli/check_command.h"
#include "cli/cli_validation.h"
#include "cli/terminal_mode.h"
#include "report/json_report_reader.h"
#include "report/report_files.h"
#include "run/shard_merge.h"
#include "text/printable_text.h"

namespace attncheck {
namespace {

int refuse(std::ostream& err, const std::string& why) {
  err << "attncheck merge: " << printable(why) << "\n";
  return 2;
}

int run_merge_unguarded(const MergeArgs& a, std::ostream& out, std::ostream& err) {
  if (a.paths.empty()) return refuse(err, "name the shards' JSON reports (check --shard I/N --json FILE)");
  if (const std::string bad = report_paths_problem(a.reports); !bad.empty()) return refuse(err, bad);
  // Writing a report clears its file first: an output that is an input would be lost.
  for (const auto& [key, path] : a.reports)
    for (const std::string& in : a.paths) {
      std::error_code ec;
      if (!path.empty() && (path == in || std::filesystem::equivalent(path, in, ec)))
        return refuse(err, in + " is both a shard's report and the merge's output");
    }
  std::string terminal_error;
  const std::optional<TerminalMode> mode = terminal_mode(TerminalFacts::of_this_process(), a.color, a.quiet, terminal_error);
  if (!mode) return refuse(err, terminal_error);
  std::vector<ShardFile> files;
  for (const std::string& path : a.paths) {
    try {
      files.push_back(ShardFile{path, read_json_report(path)});
    } catch (const ReportReadError& e) {
      return refuse(err, e.what());
    }
  }
  if (const std::string bad = shards_problem(files); !bad.empty()) return refuse(err, bad);
  RunReport merged;
  try {
    merged = merge_shards(files);
  } catch (const std::exception& e) {
    return refuse(err, e.what());
  }
  if (const std::string stale = remove_stale_reports(a.reports); !stale.empty()) return refuse(err, stale);
  std::ostringstream discarded;
  std::ostream& chatter = mode->quiet ? static_cast<std::ostream&>(discarded) : out;
  out << "merged " << files.size() << " shard report(s) of seed " << merged.seed << " ("
      << files.front().report.shard->items << " work items)\n";
  chatter << "\n";
  std::vector<std::string> errors;
  return report_run(merged, a.reports, mode->colour, "merge", errors, chatter, out, err);
}

}  // namespace

int run_merge(const MergeArgs& args, std::ostream& out, std::ostream& err) {
  try {
    return run_merge_unguarded(args, out, err);
  } catch (const std::exception& e) {
    return refuse(err, e.what());
  }
}

}  // namespace attncheck
