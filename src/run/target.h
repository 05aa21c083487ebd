// One implementation to check, as the run engine knows it from the choice of
// targets to the report: the CLI's --impl, --plugin and --python, the
// embedded default's built-ins (default_run.h), the C++ API's callable. Who it
// is, how to open it, what is expected of it, how a failure of it is
// reproduced, and, once probed (plan.h), which calls it takes.
//
// The settings every target of a run shares (seed, cases, the shapes asked
// for, the case folder, the budget's stop) are RunSettings
// (check_implementation.h), not repeated here.
//
// Example usage:
//   Target t{.name = "naive", .source = "builtin:naive", .loaded = make_builtin("naive"),
//            .open = builtin_factory("naive"), .new_instance_per_law = true};
//   if (!probe_target(t, every_dtype())) ...;  // it takes none of them: nothing can be checked
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "impls/implementation.h"
#include "law_framework/process_law.h"
#include "report/run_report.h"
#include "run/dtype_probe.h"
#include "run/shape_probe.h"

namespace attncheck {

// A new instance of an implementation; nullptr (and `error`) when none can be opened.
using ImplementationFactory = std::function<std::unique_ptr<Implementation>(std::string& error)>;

// A new instance of the built-in `name` for each call (impls/builtins.h).
ImplementationFactory builtin_factory(const std::string& name);

// What the probes learned before any law ran.
struct TargetProbes {
  DTypeProbe dtypes;    // which of the requested dtypes it offers
  ShapeFindings shapes;  // which shapes it accepts (in the first offered dtype)
  // What it declares that no law judges yet (Implementation::declared_not_judged),
  // read while it is loaded: under --jobs the instance is closed before the laws.
  std::vector<std::string> not_judged;

  // The probes' process fault, charged to its process law like any other. The
  // dtype probe's comes first: after it, a plugin that cannot be restarted
  // answers nothing the shape probe could learn from.
  // found_while names the probes.
  std::optional<ProcessFault> fault() const;
};

struct Target {
  std::string name;    // in the reports and in --expect-fail IMPL/LAW
  std::string source;  // "builtin:naive", "plugin:/path/lib.so", "python:file.py:f", "cpp:mine"
  // The instance the probes use, and the one a run with one worker calls (a
  // plugin is then loaded once). A run with workers closes it before they
  // start, so that no worker inherits its host's sockets.
  std::unique_ptr<Implementation> loaded;
  // Another instance, for a law (built-ins) or a worker of --jobs; unset: `loaded` only.
  ImplementationFactory open;
  // A built-in: a new instance per law, so its state between calls
  // (BuiltinInfo::reset) starts the same for a law whatever ran before it.
  bool new_instance_per_law = false;
  // The embedded default's: the references must pass, the zoo must be caught
  // (a zoo member's saved cases then record "expect": "fail").
  Expectation expectation = Expectation::none;
  // Nonzero: only laws that require one of these features run; the others are
  // skipped with `only_reason` (the embedded default's backward zoo).
  FeatureBits only_laws_requiring = 0;
  std::string only_reason;
  // Nonzero: likewise, only laws that judge one of these ABI v3 promises
  // (Law::required_promises) run (the embedded default's promise zoo, as
  // accurate as the references but for the last bits its promise forbids).
  uint32_t only_laws_promising = 0;
  // Laws this target runs after the run's own, which the run did not select:
  // the embedded default's opt-in laws pinned in a zoo member's row (its
  // fault shows under no default law), for that member alone. Its report
  // lists them after the run's laws; every other target's is unchanged.
  std::vector<const Law*> extra_laws;
  // The command line (or API call) that reproduces a failure of `law` on this
  // target alone; unset: none is given.
  std::function<std::string(const std::string& law)> reproduce;
  // What its probes learned (probe_target, plan.h); unset: not probed, its
  // cases are drawn from the run's options as they are.
  std::optional<TargetProbes> probes;
  // Notes its own processes left for the report, read once its laws are done
  // (a Python function's warnings: cli/python_warnings.h); unset: none.
  std::function<std::vector<std::string>()> own_notes;
};

}  // namespace attncheck
