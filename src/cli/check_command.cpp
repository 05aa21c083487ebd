#include "cli/check_command.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <filesystem>
#include <memory>
#include <random>
#include <sstream>

#include "run/check_implementation.h"
#include "cli/cli_validation.h"
#include "run/default_run.h"
#include "run/dtype_probe.h"
#include "run/parallel_check.h"
#include "cli/python_targets.h"
#include "run/shape_probe.h"
#include "run/run_budget.h"
#include "impls/builtins.h"
#include "impls/in_process.h"
#include "plugin/plugin_host.h"
#include "plugin/printable_text.h"
#include "run/expectations.h"
#include "cli/progress_line.h"
#include "cli/terminal_mode.h"
#include "report/console_report.h"
#include "report/report_files.h"
#include "report/timestamp.h"

namespace attncheck {
namespace {

// One implementation to check, and the flag that names it on a command line.
struct Target {
  std::unique_ptr<Implementation> impl;  // the probes' instance
  std::string flag;  // "--impl naive" | "--plugin /path/lib.so" (quoted for a shell)
  Expectation expectation = Expectation::none;
  ImplementationFactory open;  // another instance, for a law or a worker of --jobs
  bool builtin = false;
  FeatureBits only_laws_requiring = 0;  // DefaultTarget's
  std::string only_reason;
  std::string label;  // --plugin NAME=PATH: the name the reports give it; empty: its own name
};

ImplementationFactory builtin_factory(const std::string& name) {
  return [name](std::string& error) {
    std::unique_ptr<Implementation> impl = make_builtin(name);
    if (!impl) error = "unknown implementation '" + name + "'";
    return impl;
  };
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

// "all", one dtype name, or a comma-separated list of them; nullopt if any is unknown.
std::optional<std::vector<DType>> parse_dtypes(const std::string& text) {
  if (text == "all") return every_dtype();
  std::vector<DType> out;
  std::stringstream in(text);
  for (std::string word; std::getline(in, word, ',');) {
    const std::optional<DType> t = dtype_from_name(word);
    if (!t) return std::nullopt;
    if (std::find(out.begin(), out.end(), *t) == out.end()) out.push_back(*t);
  }
  if (out.empty()) return std::nullopt;
  return out;
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
  for (const ReportFormat& f : report_formats())
    if (const std::string path = report_path(a, f.key); !path.empty()) s += " " + std::string(f.flag) + " " + shell_quote(path);
  if (!a.save_failures_dir.empty()) s += " --save-failures " + shell_quote(a.save_failures_dir);
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

// Resolves --law: every law when none is named, else the named ones in catalogue order.
bool choose_laws(const CheckArgs& a, std::vector<const Law*>& laws, std::ostream& err) {
  for (const std::string& name : a.laws) {
    if (find_law(name)) continue;
    std::vector<std::string> names;
    for (const Law& l : all_laws()) names.push_back(l.name);
    err << "attncheck check: unknown law '" << name << "'; the laws are: " << joined(names) << "\n";
    return false;
  }
  for (const Law& l : all_laws())
    if (a.laws.empty() ? l.in_default_catalogue : std::find(a.laws.begin(), a.laws.end(), l.name) != a.laws.end())
      laws.push_back(&l);
  return true;
}

// --python: each target is the bridge plugin with the target in its environment.
bool choose_python_targets(const CheckArgs& a, const PluginOptions& options, std::vector<Target>& targets,
                           std::ostream& err) {
  for (const std::string& target : a.pythons)
    if (const std::string bad = python_target_problem(target); !bad.empty()) {
      err << "attncheck check: " << bad << "\n";
      return false;
    }
  std::string error;
  const std::string bridge = python_bridge_path(error);
  if (bridge.empty()) {
    err << "attncheck check: " << error << "\n";
    return false;
  }
  for (const std::string& target : a.pythons) {
    const PluginOptions o = python_target_options(options, target);
    std::unique_ptr<Implementation> impl = load_plugin(bridge, o, error);
    if (!impl) {
      err << "attncheck check: --python " << printable(target) << ": " << printable(error) << "\n";
      return false;
    }
    ImplementationFactory again = [bridge, o](std::string& error) { return load_plugin_again(bridge, o, error); };
    targets.push_back(
        {std::move(impl), "--python " + shell_quote(target), Expectation::none, std::move(again), false, 0, {}, ""});
  }
  return true;
}

bool choose_targets(const CheckArgs& a, const PluginOptions& options, std::vector<Target>& targets,
                    std::ostream& err) {
  if (!any_plugin(a) && a.impls.empty()) {
    for (const DefaultTarget& d : default_targets())
      targets.push_back({make_builtin(d.name), "--impl " + d.name, d.expectation, builtin_factory(d.name), true,
                         d.only_laws_requiring, d.only_reason, ""});
    return true;
  }
  for (const std::string& arg : a.plugins) {
    const PluginArg parsed = split_plugin_arg(arg);
    const std::string& path = parsed.path;
    std::string error;
    std::unique_ptr<Implementation> impl = load_plugin(path, options, error);
    if (!impl) {
      err << "attncheck check: " << printable(error.empty() ? "cannot load plugin " + path : error) << "\n";
      return false;
    }
    ImplementationFactory again = [path, options](std::string& error) {
      return load_plugin_again(path, options, error);
    };
    targets.push_back({std::move(impl), "--plugin " + shell_quote(arg), Expectation::none, std::move(again), false, 0,
                       {}, parsed.label});
  }
  if (!a.pythons.empty() && !choose_python_targets(a, options, targets, err)) return false;
  std::vector<std::string> seen;
  for (const std::string& name : a.impls) {
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
    seen.push_back(name);
    std::unique_ptr<Implementation> impl = make_builtin(name);
    if (!impl) {
      std::vector<std::string> names;
      for (const BuiltinInfo& b : builtins()) names.emplace_back(b.name);
      err << "attncheck check: unknown implementation '" << name << "'; the built-ins are: " << joined(names)
          << " (or load your own with --plugin PATH)\n";
      return false;
    }
    targets.push_back({std::move(impl), "--impl " + shell_quote(name), Expectation::none, builtin_factory(name), true, 0, {}, ""});
  }
  return true;
}

// The name each target has in the reports: its label, else its own name; a
// name taken already gets "-2", "-3", ... (two plugins may call themselves
// the same, and CI systems fold testcases with the same classname and name).
// Two equal labels are refused: the user chose them to tell plugins apart.
bool report_names(const std::vector<Target>& targets, std::vector<std::string>& names, std::ostream& err) {
  for (const Target& t : targets)
    if (!t.label.empty() && std::count(names.begin(), names.end(), t.label)) {
      err << "attncheck check: --plugin " << t.label << "=...: the label " << t.label << " is given twice\n";
      return false;
    } else {
      names.push_back(t.label);
    }
  for (std::size_t k = 0; k < targets.size(); ++k) {
    if (!names[k].empty()) continue;
    const std::string own = targets[k].impl->name();
    std::string name = own;
    for (int n = 2; std::count(names.begin(), names.end(), name); ++n) name = own + "-" + std::to_string(n);
    names[k] = name;
  }
  return true;
}

// The results of the laws that ran, in `ran` order, with the laws left out by
// --skip-law put back in their catalogue places (`requested` order), skipped.
std::vector<LawResult> with_skipped_laws(std::vector<LawResult> ran, const std::vector<const Law*>& requested,
                                         const Expectations& e) {
  std::vector<LawResult> out;
  std::size_t next = 0;
  for (const Law* law : requested) {
    if (!e.skipped(law->name)) {
      if (next < ran.size()) out.push_back(std::move(ran[next++]));
      continue;
    }
    LawResult l;
    l.run.law = law->name;
    l.run.status = LawStatus::skipped;
    l.run.skip_reason = SkipReason::by_request;
    l.run.message = "not run: --skip-law";
    out.push_back(std::move(l));
  }
  for (; next < ran.size(); ++next) out.push_back(std::move(ran[next]));
  return out;
}

int run_check_unguarded(const CheckArgs& a, std::ostream& out, std::ostream& err) {
  const std::optional<std::vector<DType>> dtypes = parse_dtypes(a.dtype);
  if (!dtypes) {
    err << "attncheck check: bad --dtype '" << a.dtype << "'; choose " << dtype_names() << " or all\n";
    return 2;
  }
  PluginOptions plugin_options;
  for (const std::string& bad :
       {cases_problem(a.cases), plugin_options_problem(a.timeout_ms, a.load_timeout_ms, a.memory_limit, plugin_options),
        wall_limits_problem(a.wall_timeout_ms, a.load_wall_timeout_ms, plugin_options),
        report_paths_problem(a.reports), budget_problem(a.budget_seconds), jobs_problem(a.jobs)})
    if (!bad.empty()) {
      err << "attncheck check: " << bad << "\n";
      return 2;
    }
  if (a.min_judged < 1) {
    err << "attncheck check: --min-judged must be at least 1 (got " << a.min_judged << ")\n";
    return 2;
  }
  std::string shape_error;
  const std::optional<GenOptions> shapes = shape_options(a.shapes, shape_error);
  if (!shapes) {
    err << "attncheck check: " << shape_error << "\n";
    return 2;
  }
  std::string terminal_error;
  const std::optional<TerminalMode> mode =
      terminal_mode(TerminalFacts::of_this_process(), a.color, a.quiet, terminal_error);
  if (!mode) {
    err << "attncheck check: " << terminal_error << "\n";
    return 2;
  }
  bool seed_from_env = false;
  std::string seed_error;
  const std::optional<uint64_t> seed = seed_from_flag_or_env(a.seed, seed_from_env, seed_error);
  if (!seed_error.empty()) {
    err << "attncheck check: " << seed_error << "\n";
    return 2;
  }
  Expectations expectations;
  expectations.skip_laws = a.skip_laws;
  std::string expectation_error;
  for (const std::string& x : a.expect_fail)
    if (!add_expect_fail(x, expectations, expectation_error)) {
      err << "attncheck check: " << expectation_error << "\n";
      return 2;
    }
  if (!a.config.empty() && !load_expectations_config(a.config, expectations, expectation_error)) {
    err << "attncheck check: " << expectation_error << "\n";
    return 2;
  }
  // The laws now, before any plugin is loaded; the implementations' names once they are.
  if (const std::string bad = expectations_problem(expectations, {}); !bad.empty()) {
    err << "attncheck check: " << bad << "\n";
    return 2;
  }
  std::vector<const Law*> requested;
  if (!choose_laws(a, requested, err)) return 2;
  std::vector<const Law*> laws;
  for (const Law* l : requested)
    if (!expectations.skipped(l->name)) laws.push_back(l);
  for (const ReportFormat& f : report_formats())
    if (const std::string path = report_path(a, f.key); !path.empty() && !writable(path, false, err, f.flag.data()))
      return 2;
  if (!a.save_failures_dir.empty() && !writable(a.save_failures_dir, true, err, "--save-failures")) return 2;
  // Before anything is loaded or run: an interrupted run must leave no earlier report behind.
  if (const std::string bad = remove_stale_reports(a.reports); !bad.empty()) {
    err << "attncheck check: " << printable(bad) << "\n";
    return 2;
  }
  std::vector<Target> targets;
  if (!choose_targets(a, plugin_options, targets, err)) return 2;
  std::vector<std::string> names;
  if (!report_names(targets, names, err)) return 2;
  if (const std::string bad = expectations_problem(expectations, names); !bad.empty()) {
    err << "attncheck check: " << bad << "\n";
    return 2;
  }
  // --quiet: what the run printed on the way is left out, the failures and the verdict stay.
  std::ostringstream discarded;
  std::ostream& chatter = mode->quiet ? static_cast<std::ostream&>(discarded) : out;
  const ConsoleStyle style{mode->colour};

  RunReport report;
  report.seed = seed ? *seed : fresh_seed();
  report.timestamp = utc_timestamp();
  report.profile = a.shapes.profile;
  report.default_run = !any_plugin(a) && a.impls.empty();
  out << "seed: " << report.seed << (seed_from_env ? " (from ATTNCHECK_SEED)" : "") << "\n";
  chatter << "rerun: " << rerun_command(a, report.seed) << "\n";
  if (report.default_run)
    chatter << "embedded default: every built-in; the references must pass every law, every zoo member must be caught\n";
  out.flush();

  RunBudget budget(a.budget_seconds);

  // Ask every implementation which dtypes and shapes it takes before any law runs.
  std::vector<DTypeProbe> probes;
  std::vector<ShapeFindings> findings;
  for (Target& t : targets) {
    probes.push_back(probe_dtypes(*t.impl, *dtypes));
    const DTypeProbe& p = probes.back();
    for (const DroppedDType& d : p.dropped) chatter << t.impl->name() << ": " << describe(d) << "\n";
    if (p.supported.empty()) {
      err << "attncheck check: " << t.impl->name() << " (" << t.impl->source()
          << ") supports none of the requested calls: every probe of dtype " << a.dtype
          << " (head_dim 2 to 256, q_len 4 and 1, kv_len 2 to 128) answered ATTNCHECK_UNSUPPORTED; nothing can be checked\n";
      return 2;
    }
    findings.push_back(probe_shapes(*t.impl, p.supported.front()));
    if (findings.back().restricts())
      chatter << t.impl->name() << ": accepts only " << findings.back().describe() << "; cases are drawn within that\n";
  }

  std::vector<std::string> errors;
  std::vector<CheckTarget> checks;
  for (std::size_t k = 0; k < targets.size(); ++k) {
    Target& t = targets[k];
    LawRunSettings s;
    s.options.seed = report.seed;
    s.options.cases = a.cases;
    s.options.shrink_seconds = kShrinkSecondsPerLaw;
    s.options.gen = *shapes;
    s.options.gen.dtypes = probes[k].supported;
    restrict_to(s.options.gen, findings[k]);
    // A fault in the dtype probe comes first: after it, a plugin that cannot be
    // restarted answers nothing the shape probe could learn from.
    const bool dtype_fault = probes[k].fault_case.has_value();
    s.probe_fault_case = dtype_fault ? probes[k].fault_case : findings[k].fault_case;
    s.probe_fault_status = dtype_fault ? probes[k].fault_status : findings[k].fault_status;
    s.probe_fault_message = dtype_fault ? probes[k].fault_message : findings[k].fault_message;
    s.options.min_judged = std::min(a.min_judged, a.cases);  // a floor above --cases could never be met
    s.save_failures_dir = a.save_failures_dir;
    s.must_fail = t.expectation == Expectation::must_be_caught;
    s.expected_failure = [&expectations, name = names[k]](const std::string& law) {
      return expectations.find(name, law);
    };
    s.only_laws_requiring = t.only_laws_requiring;
    s.only_reason = t.only_reason;
    s.stop_reason = [&budget] { return budget.over() ? budget.not_run() : std::string(); };
    s.reproduce = [&, flag = t.flag](const std::string& law) {
      return rerun_command(a, report.seed, Focus{flag, law});
    };
    checks.push_back({names[k], t.impl->source(), t.open, t.builtin, std::move(t.impl), std::move(s)});
  }
  ProgressLine progress(err, mode->progress, checks.size() * laws.size());
  // With a progress line the "checking ..." line is printed whole when its
  // implementation is done: half a line on stdout would be drawn over.
  auto checking = [&](std::size_t k) {
    return "checking " + checks[k].name + " (" + checks[k].source + "): " + std::to_string(laws.size()) +
           " law(s), " + std::to_string(a.cases) + " cases each ...";
  };
  auto started = [&](std::size_t k) {
    if (!mode->progress) chatter << checking(k) << std::flush;
  };
  const bool on_items_serial = a.jobs <= 1 || checks.size() * laws.size() <= 1;
  CheckProgress on_items;
  on_items.started = [&](std::size_t k, const Law& law) { progress.working_on(checks[k].name, law.name); };
  on_items.finished = [&](std::size_t k, const LawResult& l) {
    if (!on_items_serial) progress.working_on(checks[k].name, l.run.law + " done");
    progress.finished_one(l.run.judged);
  };
  auto done = [&](std::size_t k, std::vector<LawResult> results, double seconds) {
    ImplementationResult r = finish_implementation(checks[k].name, checks[k].source,
                                                   with_skipped_laws(std::move(results), requested, expectations),
                                                   checks[k].settings, errors);
    r.seconds = seconds;
    if (budget.spent()) r.notes.push_back(budget.describe());
    r.expectation = targets[k].expectation;
    r.insufficient_fails = !a.allow_insufficient;
    r.accepted_shapes = findings[k].describe();
    for (const DroppedDType& d : probes[k].dropped) r.notes.push_back(describe(d));
    progress.clear();
    if (mode->progress) chatter << checking(k);
    chatter << " " << (r.failed() ? "fail" : "pass") << " (" << static_cast<int>(r.seconds * 10) / 10.0 << " s)\n"
            << std::flush;
    report.implementations.push_back(std::move(r));
  };
  out.flush();
  run_checks(checks, laws, a.jobs, budget, started, done, errors, on_items);
  progress.clear();
  chatter << "\n";
  if (budget.spent()) out << budget.describe() << "\n";

  print_law_table(report, chatter, style);
  print_failures(report, out, style);
  for (const ImplementationResult& r : report.implementations)
    for (const LawResult& l : r.laws)
      if (l.passed_despite) out << "note: " << r.name << ": " << passed_despite_note(l) << "\n";
  print_verdict(report, out, style);
  out << "seed: " << report.seed << "\n";

  for (const ReportFormat& f : report_formats()) {
    const std::string path = report_path(a, f.key);
    if (path.empty()) continue;
    try {
      f.write(report, path);
      out << "wrote " << f.title << " report to " << path << "\n";
    } catch (const std::exception& e) {
      errors.push_back(e.what());
    }
  }
  for (const std::string& e : errors) err << "attncheck check: " << printable(e) << "\n";
  if (!errors.empty()) return 2;
  if (report.default_run) return report.expectations_held() ? 0 : 1;
  return report.any_failure() ? 1 : 0;
}

}  // namespace

int run_check(const CheckArgs& args, std::ostream& out, std::ostream& err) {
  try {
    return run_check_unguarded(args, out, err);
  } catch (const std::exception& e) {
    err << "attncheck check: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace attncheck
