// The checks of flags that more than one command takes, in one place, so that
// `check` and `replay` refuse the same values with the same words (exit 2).
// Each returns "" when the value is fine, else the message that follows
// "attncheck <command>: ".
//
// Example usage:
//   PluginOptions o;
//   if (std::string bad = plugin_options_problem(args.timeout_ms, args.load_timeout_ms, args.memory_limit, o);
//       !bad.empty()) { err << "attncheck replay: " << bad << "\n"; return 2; }
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "host/plugin_host.h"
#include "report/report_formats.h"

namespace attncheck {

// --cases above this would only exhaust memory (RapidCheck keeps per-case state).
inline constexpr int kMaxCases = 1000000;

// --timeout-ms, --load-timeout-ms, --memory-limit: checked and, when fine, put into `options`.
std::string plugin_options_problem(int timeout_ms, int load_timeout_ms, const std::string& memory_limit,
                                   PluginOptions& options);

// --wall-timeout-ms, --load-wall-timeout-ms: 0 (derived from the CPU limits,
// host/time_limits.h) or at least 1; put into `options`.
std::string wall_limits_problem(int wall_timeout_ms, int load_wall_timeout_ms, PluginOptions& options);

// "512M", "4G", "2GiB", "1073741824" (bytes), "none" (0: no limit); nullopt when not a size.
std::optional<uint64_t> parse_memory_size(const std::string& text);

// --cases N: 1 .. kMaxCases.
std::string cases_problem(int cases);

// --budget SECONDS: 0 (none) or more.
std::string budget_problem(double seconds);

// --jobs N: 1 .. kMaxJobs (parallel_check.h).
std::string jobs_problem(int jobs);

// The report flags (--json, --junit, ...): a file each ("-" is not one), and
// no file named by two of them.
std::string report_paths_problem(const ReportPaths& paths);

// --plugin NAME=PATH: a label chosen by the user, the name the reports give
// the plugin. The text is NAME=PATH when it holds an '=', the part before it
// is a label (letters, digits, '_', '-', '.'; no '/') and the whole text is
// not itself an existing file; otherwise it is a plain PATH (label empty).
struct PluginArg {
  std::string label;  // empty: the name the plugin gives itself
  std::string path;
};
PluginArg split_plugin_arg(const std::string& text);

// The seed of a run: `given` (--seed) when set, else ATTNCHECK_SEED when set
// and not empty (`from_env` true), else nullopt (a fresh one is drawn).
// `error` is set (and nullopt returned) when ATTNCHECK_SEED is not a seed;
// ATTNCHECK_SEED is read by driver/seed_env.h, as everywhere else, and --seed's
// text by its parse_seed_text.
std::optional<uint64_t> seed_from_flag_or_env(const std::optional<uint64_t>& given, bool& from_env,
                                              std::string& error);

// The first word of the command line when it names no command (it does not
// start with '-' and is not check, replay or list): the message naming it and
// the commands; "" otherwise.
std::string unknown_command_problem(int argc, char** argv);

}  // namespace attncheck
