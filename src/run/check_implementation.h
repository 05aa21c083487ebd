// Runs the chosen laws against one implementation and turns what run_law
// found into the report's results: process faults seen under other laws are
// charged to the process law they belong to, each failure gets its diagnosis,
// its saved case file and the command that reproduces it.
//
// Example usage:
//   LawRunSettings s;  s.options.seed = 42;  s.options.gen.dtypes = {DType::f32};
//   s.reproduce = [](const std::string& law) { return "attncheck check --impl naive --law " + law + " --seed 42"; };
//   std::vector<std::string> errors;
//   ImplementationResult r = check_implementation(impl, {find_law("matches_oracle")}, s, errors);
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "run/expectations.h"
#include "laws/law.h"
#include "driver/law_run.h"
#include "report/run_report.h"

namespace attncheck {

struct LawRunSettings {
  RunOptions options;             // seed = the run's seed; gen.dtypes = what the implementation offers
  std::string save_failures_dir;  // empty: do not save
  std::string found_by = "rapidcheck";
  // The command line that reproduces a failure of `law` (the law to pass to --law).
  std::function<std::string(const std::string& law)> reproduce;
  // The declared expected failure of `law` on this implementation, if any
  // (check --expect-fail, --config; nullptr: none). Unset: none is expected.
  std::function<const ExpectedFailure*(const std::string& law)> expected_failure;
  // The implementation must fail (a zoo member in the embedded default run):
  // its saved cases record "expect": "fail", as do those of an expected failure.
  bool must_fail = false;
  // Asked before each law and each case (RunOptions::stop_reason): a
  // non-empty answer stops there, and a law left with too few judged cases
  // is insufficient with that reason (check --budget: "not run: the --budget
  // of 30 s was spent"), never skipped.
  std::function<std::string()> stop_reason;
  // Nonzero: a law that requires none of these features is skipped with
  // only_reason (the embedded default's backward zoo: default_run.h).
  FeatureBits only_laws_requiring = 0;
  std::string only_reason;
  // A process fault the shape probe provoked before any law ran: charged to
  // its process law like any other.
  std::optional<Problem> probe_fault_case;
  CallStatus probe_fault_status = CallStatus::ok;
  std::string probe_fault_message;
};

// One law on one implementation: insufficient (not run) when
// settings.stop_reason already says so, else run_law from the law's seed, and
// the diagnosis of its own failure.
// What a parallel check (parallel_check.h) runs per work item.
LawResult check_law(Implementation& impl, const Law& law, const LawRunSettings& settings);

// The laws' results (in catalogue order) become the implementation's: process
// faults charged to their process laws, a declared feature refused on every
// call that used it failed (include/attncheck/plugin_v2.h), the commands that
// reproduce each failure, the declared expected failures (not honoured for an
// implementation that completed no judged call: that is never a pass), the
// saved case files. `errors` receives a line for each case file
// that could not be written. Leaves `seconds` to the caller.
ImplementationResult finish_implementation(std::string name, std::string source, std::vector<LawResult> laws,
                                           const LawRunSettings& settings, std::vector<std::string>& errors);

// Both, law after law on one instance. `errors` as above.
ImplementationResult check_implementation(Implementation& impl, const std::vector<const Law*>& laws,
                                          const LawRunSettings& settings, std::vector<std::string>& errors);

// The seed one law runs from: the run's seed mixed with the law's name, so
// laws see independent cases, and `--law L --seed S` repeats exactly what law
// L saw in the full run with seed S.
uint64_t law_seed(uint64_t run_seed, std::string_view law);

}  // namespace attncheck
