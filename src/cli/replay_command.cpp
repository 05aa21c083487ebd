#include "cli/replay_command.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>

#include "casefile/case_file.h"
#include "cli/cli_validation.h"
#include "cli/progress_line.h"
#include "cli/python_targets.h"
#include "cli/shard_files.h"
#include "cli/terminal_mode.h"
#include "diagnosis/diagnose.h"
#include "driver/law_run.h"
#include "impls/in_process.h"
#include "law_framework/law.h"
#include "host/plugin_host.h"
#include "text/printable_text.h"
#include "report/report_files.h"
#include "report/run_report.h"
#include "report/timestamp.h"

namespace attncheck {
namespace fs = std::filesystem;
namespace {

struct Tally {
  int passed = 0, failed = 0, skipped = 0, unjudged = 0, refused = 0, expected = 0, unexpected_passes = 0;
};

// What the reports show of something the replay refused (a damaged case file,
// an unknown law, an implementation that cannot be loaded): a failed entry
// that names it and the reason, in the results of kRefusedName, so that no
// report of a replay that did not run as asked reads as a pass.
constexpr const char* kRefusedName = "refused";
LawResult refused_entry(const std::string& path, const std::string& law, const std::string& why) {
  LawResult l;
  l.replayed_file = path;
  l.run.law = law;
  l.run.status = LawStatus::fail;
  l.run.message = "refused: " + why;
  l.refused = true;
  return l;
}

// Appends the case files `path` names, sorted; false (reason on err) when it cannot be read.
bool case_paths(const std::string& path, std::vector<std::string>& paths, std::ostream& err) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {  // a symlink loop, a folder that cannot be searched
    err << "attncheck replay: " << printable(path) << ": " << ec.message() << "\n";
    return false;
  }
  if (ec || !fs::exists(st)) {
    err << "attncheck replay: " << printable(path) << ": no such file or folder\n";
    return false;
  }
  if (!fs::is_directory(st)) {
    paths.push_back(path);
    return true;
  }
  std::vector<std::string> found;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string file = p.filename().string();
    if (p.extension() == ".json" && !file.starts_with(".")) found.push_back(p.string());
  }
  if (ec) {
    err << "attncheck replay: " << printable(path) << ": cannot list the folder: " << ec.message() << "\n";
    return false;
  }
  if (found.empty()) err << "attncheck replay: " << printable(path) << ": no case files (*.json)\n";
  std::sort(found.begin(), found.end());
  paths.insert(paths.end(), found.begin(), found.end());
  return true;
}

// An implementation loaded once per source and kept (a plugin's child
// process is started once, not once per case), with its name in the reports.
struct Loaded {
  std::unique_ptr<Implementation> impl;
  std::string error;
  std::string name;  // a --plugin label, else the implementation's own name
  std::string flag;  // "--impl NAME" | "--plugin PATH", for the reproducing command
};

class Implementations {
 public:
  explicit Implementations(const PluginOptions& options) : options_(options) {}

  // The entry of `source` ("builtin:NAME" | "plugin:PATH"); its impl is null (and error set) when it cannot load.
  Loaded& get(const std::string& source, const std::string& label = "") {
    auto it = loaded_.find(source);
    if (it != loaded_.end()) return it->second;
    Loaded e;
    if (source.starts_with("builtin:")) {
      e.impl = make_builtin(source.substr(8));
      if (!e.impl) e.error = "unknown built-in implementation \"" + source.substr(8) + "\" (see attncheck list)";
      e.flag = "--impl " + source.substr(8);
    } else if (source.starts_with("plugin:")) {
      e.impl = load_plugin(source.substr(7), options_, e.error);
      if (!e.impl && e.error.empty()) e.error = "cannot load plugin " + source.substr(7);
      e.flag = "--plugin " + (label.empty() ? source.substr(7) : label + "=" + source.substr(7));
    } else if (source.starts_with("python:")) {  // check --python's source (cli/python_targets.h)
      const std::string target = source.substr(7);
      const std::string bridge = python_bridge_path(e.error);
      if (!bridge.empty()) e.impl = load_plugin(bridge, python_target_options(options_, target), e.error);
      if (!e.impl) e.error = "--python " + target + ": " + e.error;
      e.flag = "--python " + target;
    } else {
      e.error = source.empty() ? "no implementation recorded; give --impl or --plugin"
                               : "unknown implementation source \"" + source + "\"";
    }
    if (e.impl) e.name = label.empty() ? e.impl->name() : label;
    return loaded_.emplace(source, std::move(e)).first->second;
  }

 private:
  PluginOptions options_;
  std::map<std::string, Loaded> loaded_;
};

// The report's results, one ImplementationResult per implementation in the
// order they first appear.
class ReplayResults {
 public:
  ImplementationResult& of(const Loaded& l) {
    for (ImplementationResult& r : results_)
      if (r.source == l.impl->source() && r.name == l.name) return r;
    results_.emplace_back();
    results_.back().name = l.name;
    results_.back().source = l.impl->source();
    return results_.back();
  }
  // The entry of what the replay refused (refused_entry), made when first needed.
  ImplementationResult& refused() {
    for (ImplementationResult& r : results_)
      if (r.source == "replay:refused") return r;
    results_.emplace_back();
    results_.back().name = kRefusedName;
    results_.back().source = "replay:refused";
    return results_.back();
  }
  std::vector<ImplementationResult> take() { return std::move(results_); }

 private:
  std::vector<ImplementationResult> results_;
};

const char* word_of(const LawResult& l) {
  if (l.expected_fail()) return "XFAIL";
  if (l.unexpected_pass()) return "XPASS";
  switch (l.run.status) {
    case LawStatus::pass:
      return "PASS";
    case LawStatus::fail:
      return "FAIL";
    case LawStatus::insufficient:
      return "UNJUDGED";
    case LawStatus::skipped:
      break;
  }
  return "SKIP";
}

const char* colour_of_word(const std::string& w) {
  if (w == "PASS") return "32";
  if (w == "FAIL" || w == "XPASS" || w == "UNJUDGED") return "31";
  if (w == "XFAIL") return "33";
  return "2";
}

std::string shell_word(const std::string& w) {
  const bool plain = !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-_./=:,+@%").find(c) != std::string_view::npos;
  });
  if (plain) return w;
  std::string q = "'";
  for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The limit flags a replay was given away from their defaults, as its
// reproduce lines repeat them: a call that timed out under --timeout-ms 300
// may well answer within the default 2000 ms.
std::string limit_flags(const ReplayArgs& a) {
  std::string s;
  if (a.timeout_ms != kDefaultTimeoutMs) s += " --timeout-ms " + std::to_string(a.timeout_ms);
  if (a.wall_timeout_ms != 0) s += " --wall-timeout-ms " + std::to_string(a.wall_timeout_ms);
  if (a.load_timeout_ms != kDefaultLoadTimeoutMs) s += " --load-timeout-ms " + std::to_string(a.load_timeout_ms);
  if (a.load_wall_timeout_ms != 0) s += " --load-wall-timeout-ms " + std::to_string(a.load_wall_timeout_ms);
  if (!a.memory_limit.empty()) s += " --memory-limit " + shell_word(a.memory_limit);
  return s;
}

// Where the plugin a case records is (docs/case-files.md, "history.source"):
// the path as recorded (absolute, or relative to the working folder, as check
// was given it); else, for a relative path, the same path from the case file's
// own folder. Empty when it is in neither, with `why` naming every path tried
// and how to name the plugin instead.
std::string recorded_plugin(const std::string& case_path, const std::string& plugin, std::string& why) {
  std::error_code ec;
  if (plugin.empty()) {
    why = "it records an empty plugin path: name the plugin with --plugin PATH";
    return "";
  }
  if (fs::exists(plugin, ec)) return plugin;
  const fs::path recorded(plugin);
  const fs::path from_here = fs::absolute(recorded, ec).lexically_normal();
  std::string tried = from_here.string() + " (from the working folder)";
  if (recorded.is_relative()) {
    const fs::path beside = (fs::path(case_path).parent_path() / recorded).lexically_normal();
    if (fs::exists(beside, ec)) return beside.string();
    if (const fs::path b = fs::absolute(beside, ec).lexically_normal(); b != from_here)
      tried += " nor " + b.string() + " (from the case file's folder)";
  }
  why = "the plugin it records, " + plugin + ", is not at " + tried + ": name it with --plugin PATH (" +
        "attncheck replay " + shell_word(case_path) + " --plugin PATH)";
  return "";
}

// Why a case saved by the C++ API (source "cpp:NAME", include/attncheck/
// attncheck.hpp and gtest.hpp) cannot be replayed as recorded: NAME is a
// callable inside the user's test binary, which only that binary can call.
std::string cpp_case_refusal(const std::string& case_path, const CaseRecord& rec) {
  const std::string name = rec.source.substr(4);
  return "it was saved by the C++ API from " + name +
         ", a callable only its test binary holds: rerun that test with its seed (for ATTNCHECK_TEST: ATTNCHECK_SEED=" +
         std::to_string(rec.seed) + " <test binary> --gtest_filter=" + shell_word(name + "/" + rec.law) +
         "), or replay the case on a plugin or built-in build of the kernel: attncheck replay " +
         shell_word(case_path) + " --plugin PATH (or --impl NAME)";
}

// The source to replay a case on when no implementation is named: the one it
// records, its plugin found as recorded_plugin says. `why` is set when it
// cannot be replayed as recorded.
std::string recorded_source(const std::string& case_path, const CaseRecord& rec, std::string& why) {
  if (rec.source.starts_with("cpp:")) {
    why = cpp_case_refusal(case_path, rec);
    return "";
  }
  if (!rec.source.starts_with("plugin:")) return rec.source;
  const std::string found = recorded_plugin(case_path, rec.source.substr(7), why);
  return found.empty() ? "" : "plugin:" + found;
}

// Replays one case on one implementation: the law's verdict on it, the
// diagnosis of a failure, whether its failure was expected.
LawResult replay_one(const std::string& path, const Law& law, Loaded& loaded, const CaseRecord& rec,
                     bool recorded_expectation, const std::string& program, const std::string& limits) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  Verdict v;
  const FeatureBits declared = loaded.impl->features();
  if (const FeatureBits missing = rec.problem.features() & ~declared) {
    // Nothing to call: the case is about what the implementation does not declare.
    v = Verdict::not_applicable("the case uses " + feature_list(missing) + ", which " + loaded.name +
                                " does not declare");
  } else {
    try {
      v = check_case(law, *loaded.impl, rec.problem);
    } catch (const std::exception& e) {
      v = Verdict::fail(std::string("the law threw: ") + e.what());
    }
  }
  LawResult l;
  l.replayed_file = path;
  l.run.law = law.name;
  l.run.cases = 1;
  l.run.message = v.message;
  switch (v.status) {
    case VerdictStatus::pass:
      l.run.status = LawStatus::pass;
      l.run.judged = 1;
      break;
    case VerdictStatus::not_applicable:
      l.run.status = LawStatus::skipped;
      l.run.skip_reason = SkipReason::not_applicable;
      break;
    case VerdictStatus::unsupported:
      // A v1 implementation cannot declare masks and causal rules: its refusal
      // of one is "cannot apply". Any other refusal leaves the case unjudged.
      if (declared == kV1Features && (rec.problem.features() & kV1Features)) {
        l.run.status = LawStatus::skipped;
        l.run.skip_reason = SkipReason::unsupported;
      } else {
        l.run.status = LawStatus::insufficient;
        l.run.message = "not judged: the implementation answered ATTNCHECK_UNSUPPORTED (" + v.message + ")";
      }
      break;
    case VerdictStatus::incomplete:
      l.run.status = LawStatus::insufficient;
      l.run.message = "not judged: " + v.message;
      break;
    case VerdictStatus::fail:
      l.run.status = LawStatus::fail;
      l.run.judged = 1;
      break;
    case VerdictStatus::fault:
      // A failure, but not a judged case: the call never completed.
      l.run.status = LawStatus::fail;
      l.run.message = "fault: " + v.message;
      break;
  }
  if (l.failed()) {
    l.run.counterexample = rec.problem;
    l.run.failing_calls = v.calls;  // the calls the law built from the case, as check prints them
    // As check does: a fault model explains numbers, a crash or a hang has none.
    if (v.status == VerdictStatus::fail && !is_process_law(law.name)) l.run.diagnosis = diagnose(*loaded.impl, rec.problem);
    // A plugin's time and memory limits decide whether it times out: the line repeats them.
    const bool in_child = !loaded.flag.starts_with("--impl ");
    l.reproduce = shell_word(program) + " replay " + shell_word(path) + " " + loaded.flag + (in_child ? limits : "");
  }
  // The recorded failure is the law's; a crash, hang or bad write instead is
  // not it, and an expected failure never makes a call that did not complete a pass.
  if (recorded_expectation && rec.expect == "fail" && v.status != VerdictStatus::fault)
    l.expected_failure = "the case file records \"expect\": \"fail\"" +
                         (rec.diagnosis.empty() ? std::string() : " (" + rec.diagnosis + ")");
  l.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return l;
}

// The flags' values and the terminal, checked before anything is loaded; and
// before anything is replayed, the earlier reports go: an interrupted replay
// must leave none behind. nullopt when it cannot run as asked (exit 2).
std::optional<TerminalMode> prepare_replay(const ReplayArgs& args, PluginOptions& options, std::ostream& err) {
  for (const std::string& bad : {plugin_options_problem(args.timeout_ms, args.load_timeout_ms, args.memory_limit, options),
                                 wall_limits_problem(args.wall_timeout_ms, args.load_wall_timeout_ms, options),
                                 report_paths_problem(args.reports)})
    if (!bad.empty()) {
      err << "attncheck replay: " << bad << "\n";
      return std::nullopt;
    }
  std::string terminal_error;
  const std::optional<TerminalMode> mode =
      terminal_mode(TerminalFacts::of_this_process(), args.color, args.quiet, terminal_error);
  if (!mode) {
    err << "attncheck replay: " << terminal_error << "\n";
    return std::nullopt;
  }
  if (const std::string bad = remove_stale_reports(args.reports); !bad.empty()) {
    err << "attncheck replay: " << printable(bad) << "\n";
    return std::nullopt;
  }
  return mode;
}

// The case files the paths name, each once, in the order first named (a
// glob and its folder name some twice); nullopt when a path cannot be read
// or none names a case file (exit 2).
std::optional<std::vector<std::string>> replay_paths(const ReplayArgs& args, std::ostream& err) {
  std::vector<std::string> paths;
  for (const std::string& p : args.paths)
    if (!case_paths(p, paths, err)) return std::nullopt;
  std::vector<std::string> unique;
  for (const std::string& p : paths)
    if (std::find(unique.begin(), unique.end(), p) == unique.end()) unique.push_back(p);
  if (unique.empty()) {
    err << "attncheck replay: no case file found in " << args.paths.size() << " path(s): nothing was replayed\n";
    return std::nullopt;
  }
  return unique;
}

// A replay as it goes: what is loaded, what came out, the counts, and where
// its lines go (`chatter`: discarded under --quiet; the progress line).
struct ReplayRun {
  const ReplayArgs& args;
  Implementations cache;
  std::vector<Loaded*> chosen;  // given on the command line
  ReplayResults results;
  Tally tally;
  std::ostream& out;
  std::ostream& err;
  std::ostream* chatter = nullptr;
  ProgressLine* progress = nullptr;
  bool colour = false;
  std::string limits;  // limit_flags(args), for the reproduce lines
};

// --plugin, --python, --impl: loaded now, once each. One that cannot be loaded
// is refused (exit 2 at the end), and the replay goes on with the others.
void choose_implementations(ReplayRun& r) {
  auto choose = [&](const std::string& source, const std::string& label) {
    Loaded& l = r.cache.get(source, label);
    if (l.impl) {
      r.chosen.push_back(&l);
    } else {
      r.err << "attncheck replay: " << printable(l.error) << "\n";
      ++r.tally.refused;
      r.results.refused().laws.push_back(refused_entry(source, "load", l.error));
    }
  };
  for (const std::string& p : r.args.plugins) {
    const PluginArg a = split_plugin_arg(p);
    choose("plugin:" + a.path, a.label);
  }
  for (const std::string& p : r.args.pythons) choose("python:" + p, "");
  for (const std::string& n : r.args.impls) choose("builtin:" + n, "");
}

// One line per replayed case: failures and unjudged cases always, the rest
// unless --quiet.
void print_result(ReplayRun& r, const std::string& file, const LawResult& l, const std::string& source) {
  const std::string w = word_of(l);
  std::ostream& to = l.counts_as_failure() || l.insufficient() ? r.out : *r.chatter;
  r.progress->clear();
  to << (r.colour ? std::string("\033[") + colour_of_word(w) + "m" + w + "\033[0m" : w) << "  " << printable(file)
     << "  " << l.run.law << "  " << printable(source);
  if (!l.run.message.empty()) to << "  " << printable(l.run.message);
  to << "\n";
  if (!l.run.diagnosis.empty()) to << "         diagnosis: " << printable(l.run.diagnosis) << "\n";
  if (l.expected_fail() || l.unexpected_pass())
    to << "         expected to fail: " << printable(*l.expected_failure) << "\n";
  if (!l.reproduce.empty() && l.counts_as_failure()) to << "         reproduce: " << printable(l.reproduce) << "\n";
}

void count(Tally& tally, const LawResult& l) {
  if (l.expected_fail()) ++tally.expected;
  else if (l.unexpected_pass()) ++tally.unexpected_passes;
  else if (l.failed()) ++tally.failed;
  else if (l.insufficient()) ++tally.unjudged;
  else if (l.skipped()) ++tally.skipped;
  else ++tally.passed;
}

// A case file that cannot be replayed at all: said on stderr, counted, and
// entered in the reports as refused.
void refuse_file(ReplayRun& r, const std::string& path, const std::string& law, const std::string& said,
                 const std::string& why) {
  r.progress->clear();
  r.err << "REFUSED  " << said << "\n";
  ++r.tally.refused;
  r.results.refused().laws.push_back(refused_entry(path, law, why));
  r.progress->finished_one(0);
}

// One case file on the implementations chosen, or, with none chosen, on the
// one it records.
void replay_file(ReplayRun& r, const std::string& path) {
  const std::string file = fs::path(path).filename().string();
  r.progress->working_on("replay", printable(file));
  CaseRecord rec;
  try {
    rec = load_case(path);
  } catch (const CaseFileError& e) {
    return refuse_file(r, path, "case file", e.what(), e.what());
  }
  const Law* law = find_law(rec.law);
  if (!law)
    return refuse_file(r, path, "case file",
                       printable(path) + ": unknown law \"" + printable(rec.law) + "\" (see attncheck list)",
                       "unknown law \"" + rec.law + "\"");
  std::vector<Loaded*> targets = r.chosen;
  const bool as_recorded = r.args.plugins.empty() && r.args.impls.empty() && r.args.pythons.empty();
  if (as_recorded) {
    std::string why;
    const std::string source = recorded_source(path, rec, why);
    Loaded* recorded = why.empty() ? &r.cache.get(source) : nullptr;
    if (recorded && !recorded->impl) why = recorded->error;
    if (!recorded || !recorded->impl) return refuse_file(r, path, rec.law, printable(path) + ": " + printable(why), why);
    targets = {recorded};
  }
  for (Loaded* t : targets) {
    // The case's "expect" is about the implementation it records.
    const bool recorded = as_recorded || t->impl->source() == rec.source;
    LawResult l = replay_one(path, *law, *t, rec, recorded, r.args.program, r.limits);
    print_result(r, file, l, t->impl->source());
    count(r.tally, l);
    r.progress->finished_one(l.run.judged);
    r.results.of(*t).laws.push_back(std::move(l));
  }
}

// A replay that judged no case of an implementation is not a pass, whatever
// kept it from judging (every case refused, or about what it does not declare).
void judged_nothing_is_no_pass(RunReport& report, Tally& tally, std::ostream& out) {
  for (ImplementationResult& i : report.implementations) {
    if (i.source == "replay:refused" || i.judged() > 0 || i.laws.empty()) continue;
    out << i.name << " (" << i.source << ") judged no case of the " << i.laws.size()
        << " replayed: a replay that judged nothing is not a pass\n";
    for (LawResult& l : i.laws)
      if (l.skipped()) {
        l.run.status = LawStatus::insufficient;
        l.run.message = "judged no case of this implementation: " + l.run.message;
        --tally.skipped;
        ++tally.unjudged;
      }
  }
}

// The counts, each report file, and the exit status (docs/cli.md).
int finish_replay(const ReplayArgs& args, const RunReport& report, const Tally& tally, std::size_t files,
                  std::ostream& chatter, std::ostream& out, std::ostream& err) {
  out << "replayed " << files << " case file(s): " << tally.passed << " passed, " << tally.failed << " failed, "
      << tally.skipped << " skipped, " << tally.unjudged << " not judged, " << tally.refused << " refused";
  if (tally.expected || tally.unexpected_passes)
    out << ", " << tally.expected << " failed as expected, " << tally.unexpected_passes
        << " expected to fail but passed";
  out << "\n";
  bool write_failed = false;
  for (const ReportFormat& f : report_formats()) {
    const auto it = args.reports.find(f.key);
    if (it == args.reports.end() || it->second.empty()) continue;
    try {
      f.write(report, it->second);
      chatter << "wrote " << f.title << " report to " << it->second << "\n";
    } catch (const std::exception& e) {
      err << "attncheck replay: " << printable(e.what()) << "\n";
      write_failed = true;
    }
  }
  if (tally.refused || write_failed) return 2;
  return tally.failed || tally.unexpected_passes || tally.unjudged ? 1 : 0;
}

}  // namespace

int run_replay(const ReplayArgs& args, std::ostream& out, std::ostream& err) {
  PluginOptions options;
  const std::optional<TerminalMode> mode = prepare_replay(args, options, err);
  if (!mode) return 2;
  ReplayRun r{.args = args, .cache = Implementations(options), .out = out, .err = err, .colour = mode->colour};
  r.limits = limit_flags(args);
  choose_implementations(r);
  std::optional<std::vector<std::string>> paths = replay_paths(args, err);
  if (!paths || !keep_shard_files(args.shard, *paths, out, err)) return 2;  // --shard: this shard's files (shard_files.h)

  RunReport report;
  report.replay = true;
  report.timestamp = utc_timestamp();
  ProgressLine progress(err, mode->progress, paths->size());
  std::ostringstream discarded;
  r.chatter = mode->quiet ? static_cast<std::ostream*>(&discarded) : &out;
  r.progress = &progress;
  for (const std::string& path : *paths) replay_file(r, path);
  progress.clear();
  report.implementations = r.results.take();
  for (ImplementationResult& i : report.implementations)
    for (const LawResult& l : i.laws) i.seconds += l.seconds;
  judged_nothing_is_no_pass(report, r.tally, out);
  return finish_replay(args, report, r.tally, paths->size(), *r.chatter, out, err);
}

}  // namespace attncheck
