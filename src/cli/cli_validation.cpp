#include "cli/cli_validation.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "driver/seed_env.h"
#include "run/parallel_check.h"
#include "report/report_files.h"

namespace attncheck {

namespace {

constexpr uint64_t kMinMemoryLimit = uint64_t{16} << 20;  // below this not even a loader runs

}  // namespace

PluginArg split_plugin_arg(const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return {"", text};
  const std::string label = text.substr(0, eq);
  const bool is_label = std::all_of(label.begin(), label.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
  std::error_code ec;
  if (!is_label || std::filesystem::exists(text, ec)) return {"", text};
  return {label, text.substr(eq + 1)};
}

std::optional<uint64_t> seed_from_flag_or_env(const std::optional<uint64_t>& given, bool& from_env,
                                              std::string& error) {
  from_env = false;
  if (given) return given;
  try {
    const std::optional<uint64_t> seed = seed_from_env();  // driver/seed_env.h: the one reader
    from_env = seed.has_value();
    return seed;
  } catch (const SeedEnvError& e) {
    error = e.what();
    return std::nullopt;
  }
}

std::optional<uint64_t> parse_memory_size(const std::string& text) {
  if (text == "none") return 0;
  std::size_t i = 0;
  uint64_t n = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    if (n > (UINT64_MAX - 9) / 10) return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(text[i++] - '0');
  }
  if (i == 0) return std::nullopt;
  std::string unit = text.substr(i);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = 0;
  if (unit.empty() || unit == "B") shift = 0;
  else if (unit == "K" || unit == "KB" || unit == "KIB") shift = 10;
  else if (unit == "M" || unit == "MB" || unit == "MIB") shift = 20;
  else if (unit == "G" || unit == "GB" || unit == "GIB") shift = 30;
  else if (unit == "T" || unit == "TB" || unit == "TIB") shift = 40;
  else return std::nullopt;
  if (shift && n > (UINT64_MAX >> shift)) return std::nullopt;
  return n << shift;
}

std::string plugin_options_problem(int timeout_ms, int load_timeout_ms, const std::string& memory_limit,
                                   PluginOptions& options) {
  if (timeout_ms < 1) return "--timeout-ms must be at least 1 (got " + std::to_string(timeout_ms) + ")";
  if (load_timeout_ms < 1) return "--load-timeout-ms must be at least 1 (got " + std::to_string(load_timeout_ms) + ")";
  options.timeout_ms = timeout_ms;
  options.load_timeout_ms = load_timeout_ms;
  if (!memory_limit.empty()) {
    const std::optional<uint64_t> bytes = parse_memory_size(memory_limit);
    if (!bytes) return "--memory-limit '" + memory_limit + "' is not a size (write 512M, 4G, 2GiB, bytes, or none)";
    // 0 is not "no limit" in disguise: it would stop every plugin at once.
    if (*bytes == 0 && memory_limit != "none")
      return "--memory-limit '" + memory_limit + "' is no memory at all; write none for no limit, or a size of at least 16M";
    if (*bytes != 0 && *bytes < kMinMemoryLimit) return "--memory-limit must be at least 16M, or none";
    options.memory_limit_bytes = *bytes;
  }
  return "";
}

std::string wall_limits_problem(int wall_timeout_ms, int load_wall_timeout_ms, PluginOptions& options) {
  if (wall_timeout_ms < 0)
    return "--wall-timeout-ms must be at least 1, or 0 for the default (got " + std::to_string(wall_timeout_ms) + ")";
  if (load_wall_timeout_ms < 0)
    return "--load-wall-timeout-ms must be at least 1, or 0 for the default (got " +
           std::to_string(load_wall_timeout_ms) + ")";
  options.wall_timeout_ms = wall_timeout_ms;
  options.load_wall_timeout_ms = load_wall_timeout_ms;
  return "";
}

std::string cases_problem(int cases) {
  if (cases < 1) return "--cases must be at least 1 (got " + std::to_string(cases) + ")";
  if (cases > kMaxCases)
    return "--cases must be at most " + std::to_string(kMaxCases) + " (got " + std::to_string(cases) + ")";
  return "";
}

std::string budget_problem(double seconds) {
  if (seconds < 0 || seconds != seconds)
    return "--budget must be a number of seconds, 0 for none (got " + std::to_string(seconds) + ")";
  return "";
}

std::string jobs_problem(int jobs) {
  if (jobs < 1) return "--jobs must be at least 1 (got " + std::to_string(jobs) + ")";
  if (jobs > kMaxJobs)
    return "--jobs must be at most " + std::to_string(kMaxJobs) + " (got " + std::to_string(jobs) + ")";
  return "";
}

// "-", and two flags naming one file by name, through a symlink (a dangling
// one too) or through a hard link (report/report_files.h).
std::string report_paths_problem(const ReportPaths& paths) { return report_paths_clash(paths); }

std::string unknown_command_problem(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return "";
  for (const char* known : {"check", "replay", "list", "sensitivity", "merge"})
    if (std::strcmp(argv[1], known) == 0) return "";
  return std::string("unknown command '") + argv[1] +
         "'; the commands are: check, replay, list, sensitivity, merge (see attncheck --help)";
}

}  // namespace attncheck
