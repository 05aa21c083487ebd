// Runs the chosen laws against one implementation (a Target, target.h) and
// turns what run_law found into the report's results: process faults seen
// under other laws are charged to the process law they belong to
// (law_framework/process_law.h decides), each failure gets its diagnosis, its saved
// case file and the command that reproduces it.
//
// Example usage:
//   Target t{.name = "naive", .source = "builtin:naive", .loaded = make_builtin("naive"),
//            .reproduce = [](const std::string& law) { return "attncheck check --impl naive --law " + law; }};
//   RunSettings s{.options = {.seed = 42}};
//   std::vector<std::string> errors;
//   ImplementationResult r = check_implementation(t, {find_law("matches_oracle")}, s, errors);
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "driver/law_run.h"
#include "law_framework/law.h"
#include "report/run_report.h"
#include "run/expectations.h"
#include "run/target.h"

namespace attncheck {

// What every law run of a check shares, whatever the target.
struct RunSettings {
  // seed: the run's (each law runs from law_seed of it); gen: the shapes asked
  // for, which each target narrows to what its probes found (law_options).
  RunOptions options;
  std::string save_failures_dir;  // empty: do not save
  std::string found_by = "rapidcheck";
  // The run's declared outcomes (check --expect-fail, --config); nullptr: none.
  const Expectations* expectations = nullptr;
  // Asked before each law and each case (RunOptions::stop_reason): a
  // non-empty answer stops there, and a law left with too few judged cases
  // is insufficient with that reason (check --budget: "not run: the --budget
  // of 30 s was spent"), never skipped.
  std::function<std::string()> stop_reason;
  // Passed to every law (RunOptions::judged_so_far): the progress line's live count.
  std::function<void(int judged)> judged_so_far;
};

// The options one law runs with on `target`: the run's, drawn within the
// dtypes and shapes its probes found, with a judged floor no higher than the
// cases drawn (a floor above --cases could never be met).
RunOptions law_options(const RunSettings& settings, const Target& target);

// One law on `impl`, an instance of `target`: insufficient (not run) when
// settings.stop_reason already says so, skipped when the target runs only
// other laws, else run_law from the law's seed, and the diagnosis of its own
// failure. What a parallel check (parallel_check.h) runs per work item.
LawResult check_law(Implementation& impl, const Law& law, const Target& target, const RunSettings& settings);

// The laws' results (in catalogue order) become the implementation's: process
// faults charged to their process laws, a declared feature refused on every
// call that used it failed (include/attncheck/plugin_v2.h), the commands that
// reproduce each failure, the declared expected failures (not honoured for an
// implementation that completed no judged call: that is never a pass), the
// saved case files. `errors` receives a line for each case file
// that could not be written. Leaves `seconds` to the caller.
ImplementationResult finish_implementation(const Target& target, std::vector<LawResult> laws,
                                           const RunSettings& settings, std::vector<std::string>& errors);

// What finish_implementation reads of its Target, apart from the laws'
// results: a merge of shard reports (run/shard_merge.h) rebuilds it from the
// reports and finishes the whole implementation's results exactly as one
// unsharded run does.
struct FinishFacts {
  std::string name;
  std::string source;
  std::vector<DType> dtypes;  // law_options(settings, target).gen.dtypes
  Expectation expectation = Expectation::none;
  std::function<std::string(const std::string& law)> reproduce;
  std::optional<ProcessFault> probe_fault;  // target.probes->fault()
};
FinishFacts finish_facts(const Target& target, const RunSettings& settings);
ImplementationResult finish_results(const FinishFacts& facts, std::vector<LawResult> laws,
                                    const RunSettings& settings, std::vector<std::string>& errors);

// Both, law after law on target.loaded. `errors` as above.
ImplementationResult check_implementation(Target& target, const std::vector<const Law*>& laws,
                                          const RunSettings& settings, std::vector<std::string>& errors);

// What the target's probes found, for the report: the shapes it accepts, a
// note for each dtype dropped (every probe call refused it).
void add_probe_findings(ImplementationResult& r, const Target& target);

// The seed one law runs from: the run's seed mixed with the law's name, so
// laws see independent cases, and `--law L --seed S` repeats exactly what law
// L saw in the full run with seed S.
uint64_t law_seed(uint64_t run_seed, std::string_view law);

}  // namespace attncheck
