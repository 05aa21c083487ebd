// attncheck: tells whether an attention implementation computes attention.
// This file only parses the command line (CLI11) and hands the parsed options
// to the commands: check_command.h, replay_command.h, list_command.h.
// Exit status 2 for anything that could not run as asked (docs/cli.md).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdlib>
#include <iostream>

#include "cli/check_command.h"
#include "cli/cli_validation.h"
#include "cli/list_command.h"
#include "cli/merge_command.h"
#include "cli/replay_command.h"
#include "cli/sensitivity_command.h"
#include "driver/seed_env.h"
#include "parallel/vector_isa.h"
#include "host/orphans.h"
#include "problem/dtype.h"
#include "gen/profiles.h"
#include "report/report_formats.h"

#ifndef ATTNCHECK_VERSION
#define ATTNCHECK_VERSION "0.1.0"
#endif

int main(int argc, char** argv) {
  using namespace attncheck;
  // Read once, by the first kernel that runs; a typo would silently run the best build.
  if (const char* isa = std::getenv("ATTNCHECK_VECTOR_ISA"); isa && *isa && !parse_vector_isa(isa)) {
    std::cerr << "attncheck: ATTNCHECK_VECTOR_ISA=" << isa << " is not one of avx512, avx2, baseline (or unset it)\n";
    return 2;
  }
  // A plugin that kills its own supervisor leaves its processes to this one,
  // which ends them (host/orphans.h) instead of letting them outlive the run.
  adopt_orphans();
  CLI::App app{"attncheck: checks that an attention implementation computes attention, law by law"};
  app.set_version_flag("--version", std::string("attncheck ") + ATTNCHECK_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Examples:\n"
      "  attncheck check                                  the embedded default: every built-in\n"
      "  attncheck check --plugin ./libmine.so --junit r.xml\n"
      "  attncheck replay regression/cases/               every saved case, as recorded\n"
      "  attncheck list\n"
      "Run `attncheck COMMAND --help` for a command's flags and examples.\n"
      "Exit status: 0 pass, 1 a law failed, 2 could not run as asked.");

  CheckArgs check;
  check.program = argc > 0 ? argv[0] : "attncheck";
  check.version = ATTNCHECK_VERSION;
  CLI::App* c = app.add_subcommand("check", "run the laws against implementations (default: every built-in)");
  c->footer(
      "Examples:\n"
      "  attncheck check --impl reference --impl seed_unscaled --cases 50 --seed 1\n"
      "  attncheck check --plugin mine=./libmine.so --junit junit.xml --markdown summary.md --save-failures cases/\n"
      "  attncheck check --plugin ./libtorch_attention.so --expect-fail fully_masked_rows_zero:'NaN rows, upstream'\n"
      "  attncheck check --plugin ./libmine.so --config attncheck.json --skip-law nan_propagates\n"
      "  ATTNCHECK_SEED=42 attncheck check --impl naive --law matches_oracle --quiet\n"
      "--expect-fail [IMPL/]LAW[:REASON]: LAW is expected to fail on every implementation of the run, or\n"
      "only on IMPL (its name in the report, e.g. a --plugin label); it then shows as XFAIL (JSON status\n"
      "expected_fail) and does not fail the run; if it passes it shows as XPASS (unexpected_pass), exit 1.\n"
      "--config FILE: {\"skip_law\": [LAW...], \"expect_fail\": [{\"law\": L, \"implementation\": I, \"reason\": R}]}.\n"
      "Colour and the progress line (stderr) appear only on a terminal; CI=true or a pipe gives plain text.\n"
      "Exit status: 0 every law passed (or failed as expected), 1 a law failed, 2 could not run as asked.");
  c->add_option("--plugin", check.plugins,
                "shared library exporting the plugin ABI (repeatable); NAME=PATH names it NAME in the reports")
      ->type_name("[NAME=]PATH");
  c->add_option("--python", check.pythons,
                "Python function through the Python bridge: FILE.py:FUNCTION or MODULE:FUNCTION (repeatable)")
      ->type_name("MODULE_OR_FILE:FUNCTION");
  c->add_option("--impl", check.impls, "built-in implementation, see `attncheck list` (repeatable)")->type_name("NAME");
  c->add_option("--law", check.laws, "check only this law (repeatable; default: every law)")->type_name("NAME");
  c->add_option("--skip-law", check.skip_laws, "do not run this law; it is reported skipped (repeatable)")
      ->type_name("NAME");
  c->add_option("--expect-fail", check.expect_fail,
                "a known, accepted failure: reported XFAIL, not counted; XPASS (exit 1) if it passes (repeatable)")
      ->type_name("[IMPL/]LAW[:REASON]");
  c->add_option("--config", check.config, "read skip_law and expect_fail from this JSON file (e.g. attncheck.json)")
      ->type_name("FILE");
  c->add_option("--dtype", check.dtype, dtype_names("|") + "|all, or a comma list; drawn per case")
      ->type_name("DTYPE")
      ->capture_default_str();
  c->add_option("--cases", check.cases, "generated cases per law")->type_name("N")->capture_default_str();
  c->add_option("--shrink-seconds", check.shrink_seconds,
                "wall time one failing law may spend shrinking its case (a busier machine stops earlier in the same "
                "search; give more for the same shrunk case everywhere)")
      ->type_name("S")
      ->capture_default_str();
  c->add_option("--seed", check.seed,
                "seed of the whole run (default: $ATTNCHECK_SEED when set, else a fresh one; always printed)")
      ->type_name("N")
      ->check([](const std::string& s) {
        return parse_seed_text(s) ? std::string() : "must be a whole number from 0 to 18446744073709551615, got " + s;
      });
  c->add_option("--timeout-ms", check.timeout_ms, "CPU time one plugin call may take (its processes together)")
      ->type_name("N")
      ->capture_default_str();
  c->add_option("--wall-timeout-ms", check.wall_timeout_ms,
                "wall-clock time one plugin call may take, for a plugin that blocks (default: 30 x --timeout-ms, "
                "at least 60000)")
      ->type_name("N");
  c->add_option("--profile", check.shapes.profile, "shape profile: " + profile_names())
      ->type_name("NAME")
      ->capture_default_str();
  c->add_option("--head-dim", check.shapes.head_dims, "draw head_dim only from this comma list, e.g. 64,128")
      ->type_name("LIST");
  c->add_option("--q-len", check.shapes.q_len, "query lengths to draw, N or A..B")->type_name("RANGE");
  c->add_option("--kv-len", check.shapes.kv_len, "key lengths to draw, N or A..B")->type_name("RANGE");
  c->add_option("--batch", check.shapes.batch, "batch sizes to draw, N or A..B")->type_name("RANGE");
  c->add_option("--heads", check.shapes.heads, "head counts to draw, N or A..B")->type_name("RANGE");
  c->add_option("--min-judged", check.min_judged, "a law that judged fewer cases is insufficient, not pass")
      ->type_name("N")
      ->capture_default_str();
  c->add_flag("--allow-insufficient", check.allow_insufficient,
              "report insufficient laws without failing the run");
  c->add_option("--load-timeout-ms", check.load_timeout_ms, "CPU time loading a plugin (and each restart) may take")
      ->type_name("N")
      ->capture_default_str();
  c->add_option("--load-wall-timeout-ms", check.load_wall_timeout_ms,
                "wall-clock time loading a plugin may take (default: 3 x --load-timeout-ms, at least 180000)")
      ->type_name("N");
  c->add_option("--memory-limit", check.memory_limit,
                "memory a plugin's processes may add: 512M, 4G, none (default: half the machine's)")
      ->type_name("SIZE");
  c->add_option("--budget", check.budget_seconds,
                "bound on the whole run: past it nothing is called, the report says so (default: none)")
      ->type_name("SECONDS");
  c->add_option("--jobs", check.jobs,
                "worker processes: laws and implementations are checked in parallel, the report is the same for "
                "every N (default: the core count)")
      ->type_name("N")
      ->capture_default_str();
  for (const ReportFormat& f : report_formats())
    c->add_option(std::string(f.flag), check.reports[std::string(f.key)], std::string(f.help))->type_name("FILE");
  c->add_option("--save-failures", check.save_failures_dir, "save each failing law's shrunk case into this folder")
      ->type_name("DIR");
  c->add_option("--color", check.color, "colour on the terminal: auto (a TTY, no NO_COLOR, not CI=true), always, never")
      ->type_name("WHEN")
      ->capture_default_str();
  c->add_flag("--quiet", check.quiet, "print only the seed, the failures and the verdict; no progress line");
  c->add_option("--shard", check.shard,
                "run only this shard's part of the work, INDEX from 0 (default: $GTEST_SHARD_INDEX/"
                "$GTEST_TOTAL_SHARDS or $TEST_SHARD_INDEX/$TEST_TOTAL_SHARDS when set); join with `attncheck merge`")
      ->type_name("INDEX/COUNT");

  ReplayArgs replay;
  replay.program = check.program;
  CLI::App* r = app.add_subcommand("replay", "run saved regression cases (case files and folders of them)");
  r->footer(
      "Examples:\n"
      "  attncheck replay regression/cases/                as recorded: each case on the implementation it names\n"
      "  attncheck replay build/regressions/*.json --impl reference --junit replay.xml\n"
      "  attncheck replay cases/ --plugin mine=./libmine.so --markdown summary.md\n"
      "A case recorded with \"expect\": \"fail\" (a bug-zoo member's, or an expected failure's) must fail\n"
      "again on its recorded implementation (XFAIL); if it passes that is XPASS, a failure.\n"
      "Exit status: 0 every case as expected, 1 a case failed, 2 refused or no case file found.");
  r->add_option("PATH", replay.paths, "case files or folders of them")->required();
  r->add_option("--plugin", replay.plugins, "run the cases against this plugin instead of the recorded implementation")
      ->type_name("[NAME=]PATH");
  r->add_option("--python", replay.pythons, "run the cases against this Python function (FILE.py:FUNCTION or MODULE:FUNCTION)")
      ->type_name("MODULE_OR_FILE:FUNCTION");
  r->add_option("--impl", replay.impls, "run the cases against this built-in instead of the recorded implementation")
      ->type_name("NAME");
  r->add_option("--timeout-ms", replay.timeout_ms, "CPU time one plugin call may take (its processes together)")
      ->type_name("N")
      ->capture_default_str();
  r->add_option("--wall-timeout-ms", replay.wall_timeout_ms,
                "wall-clock time one plugin call may take (default: 30 x --timeout-ms, at least 60000)")
      ->type_name("N");
  r->add_option("--load-timeout-ms", replay.load_timeout_ms, "CPU time loading a plugin (and each restart) may take")
      ->type_name("N")
      ->capture_default_str();
  r->add_option("--load-wall-timeout-ms", replay.load_wall_timeout_ms,
                "wall-clock time loading a plugin may take (default: 3 x --load-timeout-ms, at least 180000)")
      ->type_name("N");
  r->add_option("--memory-limit", replay.memory_limit,
                "memory a plugin's processes may add: 512M, 4G, none (default: half the machine's)")
      ->type_name("SIZE");
  for (const ReportFormat& f : report_formats())
    r->add_option(std::string(f.flag), replay.reports[std::string(f.key)], std::string(f.help))->type_name("FILE");
  r->add_option("--color", replay.color, "colour on the terminal: auto, always, never")
      ->type_name("WHEN")
      ->capture_default_str();
  r->add_flag("--quiet", replay.quiet, "print only the failing cases and the summary; no progress line");
  r->add_option("--shard", replay.shard,
                "replay only this shard's case files, INDEX from 0 (default: $GTEST_SHARD_INDEX/$GTEST_TOTAL_SHARDS or "
                "$TEST_SHARD_INDEX/$TEST_TOTAL_SHARDS when set)")
      ->type_name("INDEX/COUNT");

  MergeArgs merge;
  CLI::App* m = app.add_subcommand("merge", "join the --json reports of every shard of a run (check --shard) into its report");
  m->footer(
      "Example:\n"
      "  attncheck merge shard-*.json --junit junit.xml --markdown summary.md --json merged.json\n"
      "Exit status: as one unsharded check would give (0 pass, 1 a law failed); 2 refused: a damaged file, shards of\n"
      "different runs, a shard given twice or missing.");
  m->add_option("REPORT", merge.paths, "the shards' JSON reports (check --shard I/N --json FILE)")->required();
  for (const ReportFormat& f : report_formats())
    m->add_option(std::string(f.flag), merge.reports[std::string(f.key)], std::string(f.help))->type_name("FILE");
  m->add_option("--color", merge.color, "colour on the terminal: auto, always, never")
      ->type_name("WHEN")
      ->capture_default_str();
  m->add_flag("--quiet", merge.quiet, "print only the failures and the verdict");

  CLI::App* l = app.add_subcommand("list", "name the built-in implementations and the laws");
  l->footer("Example:\n  attncheck list    one line each: name, kind (reference or zoo), what it does");

  SensitivityArgs sensitivity;
  sensitivity.program = check.program;
  CLI::App* s = app.add_subcommand(
      "sensitivity", "draw query sensitivity and weight entropy against head_dim (default: reference, seed_unscaled)");
  s->add_option("--impl", sensitivity.impls, "built-in implementation (repeatable)")->type_name("NAME");
  s->add_option("--plugin", sensitivity.plugins, "plugin shared library (repeatable)")->type_name("PATH");
  s->add_option("--python", sensitivity.pythons, "Python function through the Python bridge (repeatable)")
      ->type_name("MODULE_OR_FILE:FUNCTION");
  s->add_option("--svg", sensitivity.svg, "write the figure (two panels) here")->type_name("FILE")->required();
  s->add_option("--csv", sensitivity.csv, "write the numbers here")->type_name("FILE");
  s->footer(
      "Example: attncheck sensitivity --impl reference --plugin build/plugins/libseed_layer.so --svg s.svg --csv s.csv\n"
      "Exit status of sensitivity: 0 drawn (it judges nothing: `check` does), 2 could not run as asked.");

  if (const std::string bad = unknown_command_problem(argc, argv); !bad.empty()) {
    std::cerr << "attncheck: " << bad << "\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with status 0; every real one is 2.
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (c->parsed()) return run_check(check, std::cout, std::cerr);
  if (r->parsed()) return run_replay(replay, std::cout, std::cerr);
  if (l->parsed()) return run_list(std::cout);
  if (m->parsed()) return run_merge(merge, std::cout, std::cerr);
  if (s->parsed()) return run_sensitivity(sensitivity, std::cout, std::cerr);
  return 2;
}
