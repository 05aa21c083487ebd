#include "cli/replay_command.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>

#include "casefile/case_file.h"
#include "cli/cli_validation.h"
#include "impls/in_process.h"
#include "laws/law.h"
#include "driver/law_run.h"
#include "cli/python_targets.h"
#include "plugin/plugin_host.h"

namespace attncheck {
namespace fs = std::filesystem;
namespace {

struct Tally {
  int passed = 0, failed = 0, skipped = 0, refused = 0;
};

// The case files PATH names, sorted; false (reason on err) when there is none to read.
bool case_paths(const std::string& path, std::vector<std::string>& paths, std::ostream& err) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {  // a symlink loop, a folder that cannot be searched
    err << "attncheck replay: " << path << ": " << ec.message() << "\n";
    return false;
  }
  if (ec || !fs::exists(st)) {
    err << "attncheck replay: " << path << ": no such file or folder\n";
    return false;
  }
  if (!fs::is_directory(st)) {
    paths.push_back(path);
    return true;
  }
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string file = p.filename().string();
    if (p.extension() == ".json" && !file.starts_with(".")) paths.push_back(p.string());
  }
  if (ec) {
    err << "attncheck replay: " << path << ": cannot list the folder: " << ec.message() << "\n";
    return false;
  }
  std::sort(paths.begin(), paths.end());
  return true;
}

// Loads implementations once per source and keeps them (a plugin's child
// process is started once, not once per case).
class Implementations {
 public:
  explicit Implementations(const PluginOptions& options) : options_(options) {}

  // nullptr with `error` set when the source cannot be loaded.
  Implementation* get(const std::string& source, std::string& error) {
    auto it = loaded_.find(source);
    if (it == loaded_.end()) {
      Entry e;
      if (source.starts_with("builtin:")) {
        e.impl = make_builtin(source.substr(8));
        if (!e.impl) e.error = "unknown built-in implementation \"" + source.substr(8) + "\" (see attncheck list)";
      } else if (source.starts_with("plugin:")) {
        e.impl = load_plugin(source.substr(7), options_, e.error);
        if (!e.impl && e.error.empty()) e.error = "cannot load plugin " + source.substr(7);
      } else if (source.starts_with("python:")) {  // check --python's source (cli/python_targets.h)
        const std::string target = source.substr(7);
        const std::string bridge = python_bridge_path(e.error);
        if (!bridge.empty()) e.impl = load_plugin(bridge, python_target_options(options_, target), e.error);
        if (!e.impl) e.error = "--python " + target + ": " + e.error;
      } else {
        e.error = source.empty() ? "no implementation recorded; give --impl or --plugin"
                                 : "unknown implementation source \"" + source + "\"";
      }
      it = loaded_.emplace(source, std::move(e)).first;
    }
    error = it->second.error;
    return it->second.impl.get();
  }

 private:
  struct Entry {
    std::unique_ptr<Implementation> impl;
    std::string error;
  };
  PluginOptions options_;
  std::map<std::string, Entry> loaded_;
};

void replay_one(const std::string& file, const Law& law, Implementation& impl, const Problem& problem,
                Tally& tally, std::ostream& out) {
  Verdict v;
  try {
    v = check_case(law, impl, problem);
  } catch (const std::exception& e) {
    v = Verdict::fail(std::string("the law threw: ") + e.what());
  }
  const char* word = "FAIL";
  switch (v.status) {
    case VerdictStatus::pass: word = "PASS"; ++tally.passed; break;
    case VerdictStatus::not_applicable:
    case VerdictStatus::unsupported: word = "SKIP"; ++tally.skipped; break;
    case VerdictStatus::fail: ++tally.failed; break;
    case VerdictStatus::fault:
      ++tally.failed;
      v.message = "fault: " + v.message;
      break;
  }
  out << word << "  " << file << "  " << law.name << "  " << impl.source();
  if (!v.message.empty()) out << "  " << v.message;
  out << "\n";
}

}  // namespace

int run_replay(const ReplayArgs& args, std::ostream& out, std::ostream& err) {
  PluginOptions options;
  if (std::string bad = plugin_options_problem(args.timeout_ms, args.load_timeout_ms, args.memory_limit, options);
      !bad.empty()) {
    err << "attncheck replay: " << bad << "\n";
    return 2;
  }
  Tally tally;
  Implementations cache(options);
  std::vector<std::string> given;  // sources named on the command line
  for (const std::string& p : args.plugins) given.push_back("plugin:" + p);
  for (const std::string& p : args.pythons) given.push_back("python:" + p);
  for (const std::string& n : args.impls) given.push_back("builtin:" + n);
  std::vector<Implementation*> chosen;
  for (const std::string& source : given) {
    std::string error;
    if (Implementation* impl = cache.get(source, error)) {
      chosen.push_back(impl);
    } else {
      err << "attncheck replay: " << error << "\n";
      ++tally.refused;
    }
  }

  std::vector<std::string> paths;
  if (!case_paths(args.path, paths, err)) return 2;
  if (paths.empty()) err << "attncheck replay: " << args.path << ": no case files (*.json)\n";

  for (const std::string& path : paths) {
    const std::string file = fs::path(path).filename().string();
    CaseRecord rec;
    try {
      rec = load_case(path);
    } catch (const CaseFileError& e) {
      err << "REFUSED  " << e.what() << "\n";
      ++tally.refused;
      continue;
    }
    const Law* law = find_law(rec.law);
    if (!law) {
      err << "REFUSED  " << path << ": unknown law \"" << rec.law << "\" (see attncheck list)\n";
      ++tally.refused;
      continue;
    }
    if (!given.empty()) {
      for (Implementation* impl : chosen) replay_one(file, *law, *impl, rec.problem, tally, out);
      continue;
    }
    std::string error;
    Implementation* impl = cache.get(rec.source, error);
    if (!impl) {
      err << "REFUSED  " << path << ": " << error << "\n";
      ++tally.refused;
      continue;
    }
    replay_one(file, *law, *impl, rec.problem, tally, out);
  }

  out << "replayed " << paths.size() << " case file(s): " << tally.passed << " passed, " << tally.failed
      << " failed, " << tally.skipped << " skipped, " << tally.refused << " refused\n";
  if (tally.refused) return 2;
  return tally.failed ? 1 : 0;
}

}  // namespace attncheck
