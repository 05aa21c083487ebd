#include "cli/check_command.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <memory>
#include <random>
#include <sstream>

#include "cli/cli_validation.h"
#include "cli/interrupt_watch.h"
#include "cli/progress_line.h"
#include "cli/python_targets.h"
#include "cli/python_warnings.h"
#include "cli/terminal_mode.h"
#include "impls/builtins.h"
#include "impls/in_process.h"
#include "host/plugin_host.h"
#include "text/printable_text.h"
#include "report/console_report.h"
#include "report/report_files.h"
#include "report/timestamp.h"
#include "run/check_implementation.h"
#include "run/default_run.h"
#include "run/expectations.h"
#include "run/parallel_check.h"
#include "run/plan.h"
#include "run/run_budget.h"
#include "run/shard.h"

namespace attncheck {
namespace {

// A flag's double as the shortest text that reads back as it ("600", "2.5").
std::string number_text_for_flag(double x) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

// Quotes a word for a POSIX shell when it needs it, so printed commands can be pasted.
std::string shell_quote(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("-_./=:,+@%").find(c) != std::string_view::npos;
  });
  if (plain) return word;
  std::string q = "'";
  for (char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string joined(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : ", ") + w;
  return s;
}

std::string report_path(const CheckArgs& a, std::string_view key) {
  const auto it = a.reports.find(key);
  return it == a.reports.end() ? std::string() : it->second;
}

// Whether a plugin process runs (--plugin or --python): its limits matter then.
bool any_plugin(const CheckArgs& a) { return !a.plugins.empty() || !a.pythons.empty(); }

// One failure to reproduce: a single implementation (its flag) and law.
struct Focus {
  std::string target_flag;  // "--impl naive" | "--plugin /path/lib.so", already quoted
  std::string law;
};

// The one builder of printed command lines. Without a focus it repeats the
// whole run (implementations, laws, reports, case folder); with one, only that
// law on that implementation. Either way it repeats every flag that changes
// which cases are generated, and the seed.
std::string rerun_command(const CheckArgs& a, uint64_t seed, const std::optional<Focus>& focus = std::nullopt) {
  std::string s = shell_quote(a.program) + " check";
  if (focus) {
    s += " " + focus->target_flag + " --law " + shell_quote(focus->law);
  } else {
    for (const std::string& p : a.plugins) s += " --plugin " + shell_quote(p);
    for (const std::string& p : a.pythons) s += " --python " + shell_quote(p);
    for (const std::string& i : a.impls) s += " --impl " + shell_quote(i);
    for (const std::string& l : a.laws) s += " --law " + shell_quote(l);
  }
  if (a.dtype != "all") s += " --dtype " + shell_quote(a.dtype);
  if (a.cases != kDefaultCases) s += " --cases " + std::to_string(a.cases);
  if (a.shrink_seconds != kShrinkSecondsPerLaw) s += " --shrink-seconds " + number_text_for_flag(a.shrink_seconds);
  if (a.timeout_ms != kDefaultTimeoutMs && any_plugin(a)) s += " --timeout-ms " + std::to_string(a.timeout_ms);
  if (a.wall_timeout_ms != 0 && any_plugin(a)) s += " --wall-timeout-ms " + std::to_string(a.wall_timeout_ms);
  if (a.load_wall_timeout_ms != 0 && any_plugin(a))
    s += " --load-wall-timeout-ms " + std::to_string(a.load_wall_timeout_ms);
  s += shape_flags_text(a.shapes);
  if (a.min_judged != kDefaultMinJudged) s += " --min-judged " + std::to_string(a.min_judged);
  if (a.allow_insufficient) s += " --allow-insufficient";
  if (a.load_timeout_ms != kDefaultLoadTimeoutMs && any_plugin(a))
    s += " --load-timeout-ms " + std::to_string(a.load_timeout_ms);
  if (!a.memory_limit.empty() && any_plugin(a)) s += " --memory-limit " + shell_quote(a.memory_limit);
  s += " --seed " + std::to_string(seed);
  if (focus) return s;
  if (a.shard) s += " --shard " + shell_quote(*a.shard);
  for (const ReportFormat& f : report_formats())
    if (const std::string path = report_path(a, f.key); !path.empty()) s += " " + std::string(f.flag) + " " + shell_quote(path);
  if (!a.save_failures_dir.empty()) s += " --save-failures " + shell_quote(a.save_failures_dir);
  return s;
}

// What decides a shard's cases and verdicts, as flags (report/shard_record.h):
// the run's command without the program's path, the shard, the reports and
// the case folder, which may differ from shard to shard.
std::string shard_settings_text(const CheckArgs& a, uint64_t seed) {
  CheckArgs same = a;
  same.program = "attncheck";
  same.shard.reset();
  same.reports.clear();
  same.save_failures_dir.clear();
  std::string s = rerun_command(same, seed);
  if (a.budget_seconds > 0) s += " --budget " + std::to_string(a.budget_seconds);
  return s;
}

// Whether a report file or the case folder can be written, checked before a
// long run rather than after it: the path itself when it exists; else, for a
// file, its folder, for the case folder its nearest existing ancestor
// (save_case creates missing folders, the report writers do not).
bool writable(const std::string& path, bool folder, std::ostream& err, const char* flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  if (fs::exists(p, ec)) {
    if (folder != fs::is_directory(p, ec)) {
      err << "attncheck check: " << flag << " " << path << ": " << (folder ? "not a folder" : "is a folder") << "\n";
      return false;
    }
    if (::access(p.c_str(), W_OK) == 0) return true;
  } else {
    p = p.parent_path();
    while (folder && !p.empty() && !fs::exists(p, ec) && p != p.root_path()) p = p.parent_path();
    if (fs::is_directory(p, ec) && ::access(p.c_str(), W_OK) == 0) return true;
  }
  err << "attncheck check: " << flag << " " << path << ": cannot be written ("
      << (folder ? "no writable folder above it" : "its folder must exist and be writable") << ")\n";
  return false;
}

uint64_t fresh_seed() {
  std::random_device rd;
  const uint64_t s = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return s & ((uint64_t{1} << 53) - 1);  // exact in every JSON reader, doubles included
}


// Prints "attncheck check: <why>"; false, for the step that could not go on.
bool say(std::ostream& err, const std::string& why) {
  err << "attncheck check: " << why << "\n";
  return false;
}

// Prints "attncheck check: <bad>" when `bad` says what is wrong; whether it did.
bool refused(std::ostream& err, const std::string& bad) { return !bad.empty() && !say(err, bad); }

// What `check` was asked, validated before any plugin is loaded or any
// report file touched: a mistake costs no load and no run.
struct CheckPlan {
  std::vector<DType> dtypes;          // --dtype
  PluginOptions plugin_options;       // --timeout-ms, --memory-limit, ...
  GenOptions shapes;                  // --profile and the shape flags
  TerminalMode mode;                  // --color, --quiet and the terminal
  uint64_t seed = 0;                  // --seed, else ATTNCHECK_SEED, else a fresh one
  bool seed_from_env = false;
  Expectations expectations;          // --skip-law, --expect-fail, --config
  std::vector<const Law*> requested;  // --law's choice in catalogue order, the skipped included
  std::vector<const Law*> laws;       // those that run
  ShardSource shard;                  // --shard, else the environment's (run/shard.h)
};

// --skip-law, --expect-fail, --config and --law: the laws to run and the
// outcomes declared. The laws they name are checked here; the
// implementations they name only once the plugins are loaded.
bool plan_laws(const CheckArgs& a, CheckPlan& p, std::ostream& err) {
  p.expectations.skip_laws = a.skip_laws;
  std::string error;
  for (const std::string& x : a.expect_fail)
    if (!add_expect_fail(x, p.expectations, error)) return say(err, error);
  if (!a.config.empty() && !load_expectations_config(a.config, p.expectations, error)) return say(err, error);
  if (refused(err, expectations_problem(p.expectations, {})) || refused(err, unknown_law_problem(a.laws)))
    return false;
  p.requested = select_laws(a.laws);
  for (const Law* l : p.requested)
    if (!p.expectations.skipped(l->name)) p.laws.push_back(l);
  return true;
}

// Every flag's value, in the order docs/cli.md lists the checks (the first
// that is wrong is the one named); nullopt when one is wrong (exit 2).
std::optional<CheckPlan> plan_check(const CheckArgs& a, std::ostream& err) {
  CheckPlan p;
  const DTypeChoice dtypes = parse_dtypes(a.dtype);
  if (!dtypes.ok()) {
    err << "attncheck check: bad --dtype '" << a.dtype << "'; choose " << dtype_names() << " or all\n";
    return std::nullopt;
  }
  p.dtypes = dtypes.dtypes;
  for (const std::string& bad :
       {cases_problem(a.cases), plugin_options_problem(a.timeout_ms, a.load_timeout_ms, a.memory_limit, p.plugin_options),
        wall_limits_problem(a.wall_timeout_ms, a.load_wall_timeout_ms, p.plugin_options),
        report_paths_problem(a.reports), budget_problem(a.budget_seconds), jobs_problem(a.jobs)})
    if (refused(err, bad)) return std::nullopt;
  if (a.min_judged < 1 && refused(err, "--min-judged must be at least 1 (got " + std::to_string(a.min_judged) + ")"))
    return std::nullopt;
  if (!(a.shrink_seconds > 0 && a.shrink_seconds <= 86400) &&
      refused(err, "--shrink-seconds must be more than 0 and at most 86400 (got " +
                       number_text_for_flag(a.shrink_seconds) + ")"))
    return std::nullopt;
  std::string shape_error, terminal_error, seed_error;
  const std::optional<GenOptions> shapes = shape_options(a.shapes, shape_error);
  if (!shapes) {
    say(err, shape_error);
    return std::nullopt;
  }
  p.shapes = *shapes;
  const std::optional<TerminalMode> mode =
      terminal_mode(TerminalFacts::of_this_process(), a.color, a.quiet, terminal_error);
  if (!mode) {
    say(err, terminal_error);
    return std::nullopt;
  }
  p.mode = *mode;
  const std::optional<uint64_t> seed = seed_from_flag_or_env(a.seed, p.seed_from_env, seed_error);
  if (refused(err, seed_error)) return std::nullopt;
  p.seed = seed ? *seed : fresh_seed();
  std::string shard_error;
  p.shard = shard_from_flag_or_env(a.shard, process_environment(), shard_error);
  if (refused(err, shard_error) || refused(err, touch_status_file(p.shard))) return std::nullopt;
  if (!plan_laws(a, p, err)) return std::nullopt;
  return p;
}

// The report files and the case folder must be writable, checked before a
// long run rather than after it; and before anything is loaded or run, the
// earlier reports go: an interrupted run must leave none behind.
bool prepare_outputs(const CheckArgs& a, std::ostream& err) {
  for (const ReportFormat& f : report_formats())
    if (const std::string path = report_path(a, f.key); !path.empty() && !writable(path, false, err, f.flag.data()))
      return false;
  if (!a.save_failures_dir.empty() && !writable(a.save_failures_dir, true, err, "--save-failures")) return false;
  return !refused(err, printable(remove_stale_reports(a.reports)));
}

// A failure of one law on the target that `flag` names ("--impl naive",
// "--plugin /path/lib.so", quoted for a shell), as a command line.
std::function<std::string(const std::string&)> reproducer(const CheckArgs& a, uint64_t seed, std::string flag) {
  return [&a, seed, flag = std::move(flag)](const std::string& law) {
    return rerun_command(a, seed, Focus{flag, law});
  };
}

// --python: each target is the bridge plugin with the target in its environment.
bool choose_python_targets(const CheckArgs& a, const CheckPlan& p, std::vector<Target>& targets, std::ostream& err) {
  for (const std::string& target : a.pythons)
    if (refused(err, python_target_problem(target))) return false;
  std::string error;
  const std::string bridge = python_bridge_path(error);
  if (bridge.empty()) return say(err, error);
  for (const std::string& target : a.pythons) {
    // Its warnings go to the report, not the terminal (python_warnings.h).
    auto warnings = std::make_shared<PythonWarnings>();
    PluginOptions o = python_target_options(p.plugin_options, target);
    o.environment.emplace_back(kPythonWarningsVariable, warnings->folder());
    std::unique_ptr<Implementation> impl = load_plugin(bridge, o, error);
    if (!impl) return say(err, "--python " + printable(target) + ": " + printable(error));
    Target t{
        .loaded = std::move(impl),
        .open = [bridge, o](std::string& error) { return load_plugin_again(bridge, o, error); },
        .reproduce = reproducer(a, p.seed, "--python " + shell_quote(target)),
    };
    t.own_notes = [warnings] { return warnings->notes(); };
    targets.push_back(std::move(t));
  }
  return true;
}

// --impl NAME: a built-in, named as the user wrote it (each once).
bool choose_builtin_targets(const CheckArgs& a, const CheckPlan& p, std::vector<Target>& targets, std::ostream& err) {
  std::vector<std::string> seen;
  for (const std::string& name : a.impls) {
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
    seen.push_back(name);
    std::unique_ptr<Implementation> impl = make_builtin(name);
    if (!impl) {
      std::vector<std::string> names;
      for (const BuiltinInfo& b : builtins()) names.emplace_back(b.name);
      return say(err, "unknown implementation '" + name + "'; the built-ins are: " + joined(names) +
                          " (or load your own with --plugin PATH)");
    }
    targets.push_back(Target{
        .loaded = std::move(impl),
        .open = builtin_factory(name),
        .new_instance_per_law = true,
        .reproduce = reproducer(a, p.seed, "--impl " + shell_quote(name)),
    });
  }
  return true;
}

// The implementations to check, loaded: the embedded default's built-ins when
// none is named, else --plugin's, --python's and --impl's in that order. A
// target's `name` is its --plugin label here, empty without one (name_targets).
bool choose_targets(const CheckArgs& a, const CheckPlan& p, std::vector<Target>& targets, std::ostream& err) {
  if (!any_plugin(a) && a.impls.empty()) {
    for (Target& t : default_targets(a.laws.empty())) {
      std::erase_if(t.extra_laws, [&](const Law* l) { return p.expectations.skipped(l->name); });
      t.loaded = make_builtin(t.name);
      t.reproduce = reproducer(a, p.seed, "--impl " + t.name);
      targets.push_back(std::move(t));
    }
    return true;
  }
  for (const std::string& arg : a.plugins) {
    const PluginArg parsed = split_plugin_arg(arg);
    std::string error;
    std::unique_ptr<Implementation> impl = load_plugin(parsed.path, p.plugin_options, error);
    if (!impl) return say(err, printable(error.empty() ? "cannot load plugin " + parsed.path : error));
    targets.push_back(Target{
        .name = parsed.label,
        .loaded = std::move(impl),
        .open = [path = parsed.path, options = p.plugin_options](std::string& error) {
          return load_plugin_again(path, options, error);
        },
        .reproduce = reproducer(a, p.seed, "--plugin " + shell_quote(arg)),
    });
  }
  if (!a.pythons.empty() && !choose_python_targets(a, p, targets, err)) return false;
  return choose_builtin_targets(a, p, targets, err);
}

// The name each target has in the reports: its label, else its own name; a
// name taken already gets "-2", "-3", ... (two plugins may call themselves
// the same, and CI systems fold testcases with the same classname and name).
// Two equal labels are refused: the user chose them to tell plugins apart.
// The embedded default's built-ins come named (their own names, each once).
bool name_targets(std::vector<Target>& targets, std::ostream& err) {
  std::vector<std::string> names;
  for (const Target& t : targets)
    if (!t.name.empty() && std::count(names.begin(), names.end(), t.name))
      return say(err, "--plugin " + t.name + "=...: the label " + t.name + " is given twice");
    else
      names.push_back(t.name);
  for (std::size_t k = 0; k < targets.size(); ++k) {
    targets[k].source = targets[k].loaded->source();
    if (!names[k].empty()) continue;
    const std::string own = targets[k].loaded->name();
    std::string name = own;
    for (int n = 2; std::count(names.begin(), names.end(), name); ++n) name = own + "-" + std::to_string(n);
    names[k] = targets[k].name = name;
  }
  return true;
}

// The laws asked of `t`, the skipped included: --law's choice, then (the
// embedded default) the opt-in laws its zoo row pins (default_run.h).
std::vector<const Law*> requested_of(const CheckArgs& a, const CheckPlan& p, const Target& t) {
  std::vector<const Law*> laws = p.requested;
  if (const BuiltinInfo* b = find_builtin(t.name); b && !any_plugin(a) && a.impls.empty() && a.laws.empty())
    for (const Law* l : pinned_opt_in_laws(*b)) laws.push_back(l);
  return laws;
}

// The names of `laws`.
std::vector<std::string> names_of(const std::vector<const Law*>& laws) {
  std::vector<std::string> names;
  for (const Law* l : laws) names.push_back(l->name);
  return names;
}

// A shard's part of the run (run/shard.h): the whole run's plan and, for each
// target left with work here, where its shard's laws sit in its law list.
struct ShardRun {
  ShardSpec spec;
  ShardRecord record;
  std::vector<std::size_t> plan_index;              // per target kept: its index in record.plan
  std::vector<std::vector<std::size_t>> positions;  // per target kept: its laws' places in its law list
};

// Plans the whole run in record.plan, numbers its work items in report order
// and keeps, of `targets`, those with items in this shard, each to run just
// those (as its extra_laws, the run's laws then being none).
ShardRun plan_shard(const CheckArgs& a, const CheckPlan& p, std::vector<Target>& targets, const RunSettings& settings) {
  ShardRun s{.spec = *p.shard.spec};
  s.record.index = s.spec.index;
  s.record.count = s.spec.count;
  s.record.version = a.version;
  s.record.settings = shard_settings_text(a, p.seed);
  s.record.allow_insufficient = a.allow_insufficient;
  std::size_t g = 0;
  std::vector<Target> kept;
  for (std::size_t k = 0; k < targets.size(); ++k) {
    const std::vector<const Law*> list = requested_of(a, p, targets[k]);
    s.record.plan.push_back(shard_plan_entry(targets[k], list, settings));
    std::vector<const Law*> mine;
    std::vector<std::size_t> places;
    for (std::size_t j = 0; j < list.size(); ++j)
      if (!p.expectations.skipped(list[j]->name) && in_shard(g++, s.spec)) {
        mine.push_back(list[j]);
        places.push_back(j);
      }
    if (mine.empty()) continue;
    targets[k].extra_laws = std::move(mine);
    s.plan_index.push_back(k);
    s.positions.push_back(std::move(places));
    kept.push_back(std::move(targets[k]));
  }
  s.record.items = g;
  s.record.budget_notes.assign(s.record.plan.size(), "");
  targets = std::move(kept);
  return s;
}

// Asks every target which dtypes and shapes it takes before any law runs,
// saying what it drops or restricts; false when one takes none of the
// requested calls (nothing of it can be checked: exit 2).
bool probe_targets(const CheckArgs& a, const CheckPlan& p, std::vector<Target>& targets, std::ostream& chatter,
                   std::ostream& err) {
  for (Target& t : targets) {
    const bool takes_some = probe_target(t, p.dtypes);
    for (const DroppedDType& d : t.probes->dtypes.dropped) chatter << t.loaded->name() << ": " << describe(d) << "\n";
    if (!takes_some) {
      err << "attncheck check: " << t.loaded->name() << " (" << t.loaded->source()
          << ") supports none of the requested calls: every probe of dtype " << a.dtype
          << " (head_dim 2 to 256, q_len 4 and 1, kv_len 2 to 128) answered ATTNCHECK_UNSUPPORTED; nothing can be checked\n";
      return false;
    }
    if (t.probes->shapes.restricts())
      chatter << t.loaded->name() << ": accepts only " << t.probes->shapes.describe() << "; cases are drawn within that\n";
  }
  return true;
}

// The run's account before it starts: the seed (always), the command that
// repeats the whole run, what the embedded default expects.
void announce(const CheckArgs& a, const CheckPlan& p, const RunReport& report, std::ostream& out,
              std::ostream& chatter) {
  out << "seed: " << report.seed << (p.seed_from_env ? " (from ATTNCHECK_SEED)" : "") << "\n";
  chatter << "rerun: " << rerun_command(a, report.seed) << "\n";
  if (report.default_run)
    chatter << "embedded default: every built-in; the references must pass every law, every zoo member must be caught\n";
  out.flush();
}

// Where the run's output goes while it runs: the console's lines (`chatter`:
// discarded under --quiet) and the progress line on stderr.
struct RunConsole {
  std::ostream& chatter;
  ProgressLine& progress;
  bool progress_shown;
};

// The laws every target runs: the run's, or, in a shard, none but each target's extra_laws (plan_shard).
const std::vector<const Law*>& run_laws(const CheckPlan& p, const ShardRun* shard) {
  static const std::vector<const Law*> none;
  return shard ? none : p.laws;
}

// Target k's results as its report lists them: with the laws --skip-law left
// out put back; in a shard, those it ran, recorded for the merge.
std::vector<LawResult> report_laws(const CheckArgs& a, const CheckPlan& p, const std::vector<Target>& targets,
                                   std::size_t k, std::vector<LawResult> results, ShardRun* shard) {
  if (!shard)
    return with_skipped_laws(std::move(results), names_of(requested_of(a, p, targets[k])),
                             [&](const std::string& law) { return p.expectations.skipped(law); });
  record_ran(shard->record, shard->plan_index[k], shard->positions[k], results);
  return results;
}

// Runs every law on every target (run_checks) and puts each target's results
// in the report as it is done, in the targets' order whatever --jobs.
void run_targets(const CheckArgs& a, const CheckPlan& p, std::vector<Target>& targets, const RunSettings& settings,
                 RunBudget& budget, RunReport& report, std::vector<std::string>& errors, const RunConsole& console,
                 ShardRun* shard) {
  const std::vector<const Law*>& laws = run_laws(p, shard);
  // With a progress line the "checking ..." line is printed whole when its
  // implementation is done: half a line on stdout would be drawn over.
  auto checking = [&](std::size_t k) {
    return "checking " + targets[k].name + " (" + targets[k].source + "): " +
           std::to_string(laws.size() + targets[k].extra_laws.size()) +
           " law(s), " + std::to_string(a.cases) + " cases each ...";
  };
  auto started = [&](std::size_t k) {
    if (!console.progress_shown) console.chatter << checking(k) << std::flush;
  };
  ProgressLine& line = console.progress;
  // Without workers the one thread is in the law: a ticker thread keeps the clock going.
  std::optional<ProgressTicker> ticker;
  CheckProgress on_items;
  on_items.begins = [&](int workers) {
    if (workers == 1 && line.enabled()) ticker.emplace(line);
  };
  on_items.started = [&](int slot, std::size_t k, const Law& law) { line.working_on(slot, targets[k].name, law.name); };
  on_items.advanced = [&](int slot, long long judged) { line.advanced(slot, judged); };
  on_items.finished = [&](int slot, std::size_t, const LawResult& l) { line.finished(slot, l.run.judged); };
  on_items.tick = [&] { line.tick(); };
  on_items.interrupted = [] { return InterruptWatch::requested(); };
  RunSettings with_progress = settings;
  with_progress.judged_so_far = [&](int judged) { line.advanced(0, judged); };
  // Without workers a law stops at its next case once Ctrl-C came (with them, the workers are ended).
  with_progress.stop_reason = [inner = settings.stop_reason] {
    return InterruptWatch::requested() ? std::string(kNotRunInterrupted) : inner ? inner() : std::string();
  };
  auto done = [&](std::size_t k, std::vector<LawResult> results, double seconds) {
    ImplementationResult r =
        finish_implementation(targets[k], report_laws(a, p, targets, k, std::move(results), shard), settings, errors);
    r.seconds = seconds;
    if (budget.spent()) r.notes.push_back(budget.describe());
    if (budget.spent() && shard) shard->record.budget_notes[shard->plan_index[k]] = budget.describe();
    r.expectation = targets[k].expectation;
    r.insufficient_fails = !a.allow_insufficient;
    add_probe_findings(r, targets[k]);
    const std::vector<std::string> own = targets[k].own_notes ? targets[k].own_notes() : std::vector<std::string>{};
    r.notes.insert(r.notes.end(), own.begin(), own.end());
    console.progress.clear();
    if (console.progress_shown) console.chatter << checking(k);
    console.chatter << " " << (r.failed() ? "fail" : "pass") << " (" << static_cast<int>(r.seconds * 10) / 10.0
                    << " s)\n";
    for (const std::string& note : own) console.chatter << "  " << note << "\n";
    console.chatter << std::flush;
    report.implementations.push_back(std::move(r));
  };
  const std::size_t finished = run_checks(targets, laws, with_progress, a.jobs, budget, started, done, errors, on_items);
  ticker.reset();
  console.progress.clear();
  if (InterruptWatch::requested())
    report.interrupted = "interrupted after " + std::to_string(finished) + " of " +
                         std::to_string(work_item_count(targets, laws)) + " work items";
}

// A shard judges its part only: a failure here (of a law nobody expected to
// fail; in the embedded default, of a reference), never a pass of the run
// nor a zoo member's catch, which the other shards may hold.
bool shard_failed(const RunReport& report) {
  for (const ImplementationResult& i : report.implementations)
    if (i.failed() && (!report.default_run || i.expectation == Expectation::must_pass)) return true;
  return false;
}

std::string shard_verdict(const RunReport& report) {
  const ShardRecord& s = *report.shard;
  std::string line = "shard " + std::to_string(s.index) + "/" + std::to_string(s.count) + ": ran " +
                     std::to_string(s.ran.size()) + " of the run's " + std::to_string(s.items) + " work items";
  if (s.ran.empty()) return line + "; nothing was checked here\n";
  return line + (shard_failed(report) ? "; FAIL: a law failed here" : "; no failure here") +
         "; the run's verdict is `attncheck merge` of every shard's --json report\n";
}

int run_check_unguarded(const CheckArgs& a, std::ostream& out, std::ostream& err) {
  const auto run_start = std::chrono::steady_clock::now();
  std::optional<CheckPlan> plan = plan_check(a, err);
  if (!plan || !prepare_outputs(a, err)) return 2;
  const CheckPlan& p = *plan;
  std::vector<Target> targets;
  if (!choose_targets(a, p, targets, err) || !name_targets(targets, err)) return 2;
  std::vector<std::string> names;
  for (const Target& t : targets) names.push_back(t.name);
  if (refused(err, expectations_problem(p.expectations, names))) return 2;
  // --quiet: what the run printed on the way is left out, the failures and the verdict stay.
  std::ostringstream discarded;
  std::ostream& chatter = p.mode.quiet ? static_cast<std::ostream&>(discarded) : out;

  RunReport report;
  report.seed = p.seed;
  report.timestamp = utc_timestamp();
  report.profile = a.shapes.profile;
  report.default_run = !any_plugin(a) && a.impls.empty();
  announce(a, p, report, out, chatter);

  RunBudget budget(a.budget_seconds);
  // From here Ctrl-C stops the run with what it has (a Ctrl-C during the probes: nothing is run).
  const InterruptWatch watch;
  if (!probe_targets(a, p, targets, chatter, err)) return 2;
  const RunSettings settings{
      .options = {.seed = report.seed, .cases = a.cases, .shrink_seconds = a.shrink_seconds,
                  .min_judged = a.min_judged, .gen = p.shapes},
      .save_failures_dir = a.save_failures_dir,
      .expectations = &p.expectations,
      .stop_reason = [&budget] { return budget.over() ? budget.not_run() : std::string(); },
  };
  std::optional<ShardRun> shard;
  if (p.shard.spec) {
    shard = plan_shard(a, p, targets, settings);
    chatter << "shard " << shard->spec.index << "/" << shard->spec.count << " (" << p.shard.origin << "): "
            << work_item_count(targets, {}) << " of the run's " << shard->record.items << " work items\n";
  }
  std::vector<std::string> errors;
  ProgressLine progress(err, p.mode.progress, work_item_count(targets, run_laws(p, shard ? &*shard : nullptr)));
  out.flush();
  run_targets(a, p, targets, settings, budget, report, errors, RunConsole{chatter, progress, p.mode.progress},
              shard ? &*shard : nullptr);
  report.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  chatter << "checked in " << static_cast<int>(report.wall_seconds * 10) / 10.0 << " s (wall time)\n\n";
  if (!report.interrupted.empty()) out << report.interrupted << "; the results so far:\n";
  if (budget.spent()) out << budget.describe() << "\n";
  if (shard) report.shard = std::move(shard->record);
  const int status = report_run(report, a.reports, p.mode.colour, "check", errors, chatter, out, err);
  return report.interrupted.empty() ? status : kExitInterrupted;
}

}  // namespace

int report_run(const RunReport& report, const ReportPaths& reports, bool colour, const std::string& command,
               std::vector<std::string>& errors, std::ostream& chatter, std::ostream& out, std::ostream& err) {
  const ConsoleStyle style{colour};
  if (!report.shard || !report.implementations.empty()) print_law_table(report, chatter, style);
  print_failures(report, out, style);
  for (const ImplementationResult& r : report.implementations)
    for (const LawResult& l : r.laws)
      if (l.passed_despite) out << "note: " << r.name << ": " << passed_despite_note(l) << "\n";
  if (report.shard)
    out << shard_verdict(report);
  else
    print_verdict(report, out, style);
  out << "seed: " << report.seed << "\n";

  for (const ReportFormat& f : report_formats()) {
    const auto it = reports.find(f.key);
    if (it == reports.end() || it->second.empty()) continue;
    try {
      f.write(report, it->second);
      out << "wrote " << f.title << " report to " << it->second << "\n";
    } catch (const std::exception& e) {
      errors.push_back(e.what());
    }
  }
  for (const std::string& e : errors) err << "attncheck " << command << ": " << printable(e) << "\n";
  if (!errors.empty()) return 2;
  if (report.shard) return shard_failed(report) ? 1 : 0;
  if (report.default_run) return report.expectations_held() ? 0 : 1;
  return report.any_failure() ? 1 : 0;
}

// `names` (--law, --skip-law) with each old law name replaced by its laws'
// current names (renamed_law), saying so on `err`: CI scripts written before
// the rename keep working.
static std::vector<std::string> current_law_names(const std::vector<std::string>& names, const char* flag, std::ostream& err) {
  std::vector<std::string> out;
  for (const std::string& name : names) {
    const std::vector<std::string> now = renamed_law(name);
    if (now.empty() || find_law(name)) {
      out.push_back(name);
      continue;
    }
    err << "attncheck check: note: " << flag << " " << name << " is deprecated, now " << joined(now)
        << " (the spec's names, docs/laws.md)\n";
    out.insert(out.end(), now.begin(), now.end());
  }
  return out;
}

int run_check(const CheckArgs& given, std::ostream& out, std::ostream& err) {
  try {
    CheckArgs args = given;
    args.laws = current_law_names(given.laws, "--law", err);
    args.skip_laws = current_law_names(given.skip_laws, "--skip-law", err);
    return run_check_unguarded(args, out, err);
  } catch (const std::exception& e) {
    err << "attncheck check: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace attncheck
