// attncheck::check (include/attncheck/attncheck.hpp): the CLI's `check` for one
// in-process callable, on the same run engine (run/): the dtype and shape
// probes (run/plan.h), then check_implementation (laws, shrinking, diagnosis,
// process faults charged to their process laws, case files), then the
// console's rendering; only the result is translated into the public types,
// so the public header never exposes an internal one.
#include <algorithm>
#include <sstream>

#include "attncheck/attncheck.hpp"
#include "driver/seed_env.h"
#include "host/v3_declaration.h"
#include "impls/in_process.h"
#include "law_framework/law.h"
#include "report/console_report.h"
#include "run/check_implementation.h"
#include "run/plan.h"
#include "run/shape_flags.h"

namespace attncheck {
namespace {

std::vector<DType> dtypes_of(const Options& o) {
  const DTypeChoice choice = parse_dtypes(o.dtypes);
  if (choice.unknown)
    throw UsageError("attncheck::check: unknown dtype '" + *choice.unknown + "' in Options::dtypes; choose " +
                     dtype_names() + ", a comma list of them, or all");
  if (choice.dtypes.empty())
    throw UsageError("attncheck::check: Options::dtypes is empty; choose " + dtype_names() + " or all");
  return choice.dtypes;
}

// Options::seed, else ATTNCHECK_SEED (driver/seed_env.h, the one reader), else 1.
uint64_t seed_of(const Options& o) {
  if (o.seed) return *o.seed;
  try {
    return seed_from_env_or(1);
  } catch (const SeedEnvError& e) {
    throw UsageError(std::string("attncheck::check: ") + e.what());
  }
}

Status public_status(LawStatus s) {
  switch (s) {
    case LawStatus::pass: return Status::pass;
    case LawStatus::fail: return Status::fail;
    case LawStatus::skipped: return Status::skipped;
    case LawStatus::insufficient: return Status::insufficient;
  }
  return Status::fail;
}

// The version-3 feature bits some law judges: those v3_declarations_not_judged
// (host/v3_declaration.h, the plugin host's one list) does not name. PACKED
// today; a feature joins when its laws land and that list drops it, so a v3
// callable is taken exactly as a v3 plugin. Bit 16 (BROADCAST_KV) is the
// checker's own kBackwardFeature (problem/problem.h): it is taken as
// kBroadcastKvFeature (api_features).
uint32_t api_judged_v3_features() {
  uint32_t judged = 0;
  for (uint32_t bit = 1u << 11; bit <= ATTNCHECK_FEATURE_BROADCAST_KV; bit <<= 1)
    if (v3_declarations_not_judged(V3Declaration{.features = bit}).empty()) judged |= bit;
  return judged;
}

// A v3 callable's declaration, as a v3 plugin's is judged when it loads: what
// the spec refuses, and what no law judges yet (its verdict could not cover
// it), are UsageErrors naming the field.
void check_v3_declaration(const Callable& c, const Options& o) {
  const V3Declaration d{
      .features = o.features, .kv_formats = o.kv_formats, .promises = o.promises, .has_backward = bool(c.backward_v3)};
  if (std::string why = v3_declaration_refusal(d); !why.empty()) {
    const std::string plugin = "attncheck_plugin_v3() declares ";
    if (why.rfind(plugin, 0) == 0) why = "Options declares " + why.substr(plugin.size());
    throw UsageError("attncheck::check: " + why);
  }
  const uint32_t unjudged = o.features & ~(kAllFeatures | api_judged_v3_features());
  if (unjudged) {
    std::string names;
    for (const std::string& n : v3_declarations_not_judged(V3Declaration{.features = unjudged}))
      names += (names.empty() ? "" : ", ") + n;
    throw UsageError("attncheck::check: Options::features declares " + names +
                     ", which this version of attncheck does not judge yet: no verdict could cover it "
                     "(docs/plugins.md, \"Version 3\"); leave it out");
  }
}

// A v2 view of a v3 callable: the v2 call with every added field neutral.
// InProcessImplementation calls forward_v3 instead whenever it is set; this
// entry only makes the implementation a v2 one (features, backward).
ForwardV2Call v2_entry_of(const Callable& c) {
  return [f = c.forward_v3](const attncheck_call_v2* call, char* err, size_t n) {
    attncheck_call_v3 v3{};
    v3.v2 = *call;
    return f(&v3, err, n);
  };
}

std::unique_ptr<InProcessImplementation> implementation_of(const Callable& c, const Options& o) {
  if (int{bool(c.forward)} + int{bool(c.forward_v2)} + int{bool(c.forward_v3)} > 1)
    throw UsageError("attncheck::check: the Callable has forwards of more than one ABI version");
  if (o.promises && !c.forward_v3)
    throw UsageError("attncheck::check: Options::promises is for a v3 callable (promises are ABI version 3's); "
                     "this one takes v" + std::string(c.forward ? "1" : "2") + " calls");
  if (o.kv_formats && !c.forward_v3)
    throw UsageError("attncheck::check: Options::kv_formats is for a v3 callable (stored K/V formats are ABI "
                     "version 3's); this one takes v" + std::string(c.forward ? "1" : "2") + " calls");
  if (c.backward_v3 && !c.forward_v3)
    throw UsageError("attncheck::check: a v3 backward needs a v3 forward (attncheck::with_backward)");
  std::unique_ptr<InProcessImplementation> impl;
  if (c.forward) {
    if (c.backward_v2) throw UsageError("attncheck::check: a backward needs a v2 forward (attncheck::with_backward)");
    if (o.features) throw UsageError("attncheck::check: Options::features is for a v2 callable; this one takes v1 calls");
    impl = std::make_unique<InProcessImplementation>(o.name, c.forward);
  } else if (c.forward_v2) {
    if (o.features & ~kAllFeatures)
      throw UsageError("attncheck::check: Options::features holds ABI version 3 bits, and this callable takes v2 "
                       "calls: take const attncheck_call_v3* to declare them");
    impl = std::make_unique<InProcessImplementation>(o.name, c.forward_v2, o.features ? o.features : kV1Features,
                                                     c.backward_v2);
  } else if (c.forward_v3) {
    if (c.backward_v2) throw UsageError("attncheck::check: a v2 backward needs a v2 forward (attncheck::with_backward)");
    check_v3_declaration(c, o);
    // The ABI's BROADCAST_KV (bit 16) is the checker's kBroadcastKvFeature (bit 16 is its backward bit).
    const uint32_t broadcast = o.features & ATTNCHECK_FEATURE_BROADCAST_KV;
    const FeatureBits features = (o.features & ~broadcast) | (broadcast ? kBroadcastKvFeature : 0);
    impl = std::make_unique<InProcessImplementation>(o.name, v2_entry_of(c), features ? features : kV1Features);
    impl->set_forward_v3(c.forward_v3);
    if (c.backward_v3) impl->set_backward_v3(c.backward_v3);
    impl->set_promises(o.promises);
    impl->set_kv_formats(o.kv_formats);
  } else {
    throw UsageError("attncheck::check: the Callable is empty (no forward)");
  }
  impl->set_source("cpp:" + o.name);
  return impl;
}

}  // namespace

std::string_view status_name(Status s) {
  switch (s) {
    case Status::pass: return "pass";
    case Status::fail: return "fail";
    case Status::skipped: return "skipped";
    case Status::insufficient: return "insufficient";
  }
  return "fail";
}

bool Report::passed() const {
  return std::none_of(laws.begin(), laws.end(), [&](const LawOutcome& l) {
    return l.status == Status::fail || (l.status == Status::insufficient && !allow_insufficient);
  });
}

const LawOutcome* Report::law(std::string_view name) const {
  for (const LawOutcome& l : laws)
    if (l.law == name) return &l;
  return nullptr;
}

std::vector<std::string> selected_laws(const Options& options) {
  if (const std::string bad = unknown_law_problem(options.laws); !bad.empty()) throw UsageError("attncheck: " + bad);
  std::vector<std::string> out;
  for (const Law* l : select_laws(options.laws)) out.push_back(l->name);
  return out;
}

namespace {

// The console's account of the run, as `attncheck check` prints it.
std::string console_text(const Report& report, const Options& o, ImplementationResult r) {
  RunReport run;
  run.seed = report.seed;
  run.profile = o.profile;
  run.implementations.push_back(std::move(r));
  std::ostringstream text;
  text << "seed: " << report.seed << "\n";
  print_law_table(run, text);
  print_failures(run, text);
  print_verdict(run, text);
  for (const std::string& n : report.notes) text << "note: " << n << "\n";
  return text.str();
}

// "failing call (ROLE): DERIVATION\n<the call>" for each call the law built
// (a call that is the shrunk case itself is named, not described again).
std::string failing_calls_text(const LawResult& l) {
  std::string text;
  for (std::size_t k = 0; k < l.run.failing_calls.size(); ++k) {
    const LawCall& c = l.run.failing_calls[k];
    text += std::string(k == 0 ? "failing call (" : "compared with (") + c.role + "): " + c.derivation + "\n";
    if (!(l.run.counterexample && c.problem == *l.run.counterexample)) text += c.problem.describe();
  }
  return text;
}

LawOutcome public_outcome(const LawResult& l) {
  return LawOutcome{
      .law = l.run.law,
      .status = public_status(l.run.status),
      .cases = l.run.cases,
      .judged = l.run.judged,
      .message = l.run.message,
      .diagnosis = l.run.diagnosis,
      .failing_case = l.failed() && l.run.counterexample ? l.run.counterexample->describe() : std::string(),
      .failing_calls = l.failed() ? failing_calls_text(l) : std::string(),
      .shrink_steps = l.run.shrink_steps,
      .case_file = l.case_file,
      .found_while = l.found_while,
      .seconds = l.seconds,
  };
}

}  // namespace

Report check(const Callable& callable, const Options& o) {
  if (o.cases < 1) throw UsageError("attncheck::check: Options::cases must be at least 1 (got " + std::to_string(o.cases) + ")");
  if (o.min_judged < 1)
    throw UsageError("attncheck::check: Options::min_judged must be at least 1 (got " + std::to_string(o.min_judged) + ")");
  if (o.name.empty()) throw UsageError("attncheck::check: Options::name is empty");
  const std::vector<DType> dtypes = dtypes_of(o);
  std::string shape_error;
  const std::optional<GenOptions> shapes = shape_options(ShapeFlags{.profile = o.profile}, shape_error);
  if (!shapes) throw UsageError("attncheck::check: " + shape_error);
  std::vector<const Law*> laws;
  for (const std::string& name : selected_laws(o)) laws.push_back(find_law(name));
  std::unique_ptr<Implementation> impl = implementation_of(callable, o);

  Report report;
  report.implementation = o.name;
  report.seed = seed_of(o);
  report.allow_insufficient = o.allow_insufficient;
  Target target{
      .name = o.name,
      .source = "cpp:" + o.name,
      .loaded = std::move(impl),
      .reproduce =
          [seed = report.seed](const std::string& law) {
            return "attncheck::check with Options::seed = " + std::to_string(seed) + ", Options::laws = {\"" + law +
                   "\"} (or ATTNCHECK_SEED=" + std::to_string(seed) + " and the test of " + law + ")";
          },
  };
  // As run_check does: ask which dtypes and shapes it takes before any law runs.
  if (!probe_target(target, dtypes))
    throw UsageError("attncheck::check: " + o.name + " supports none of the requested dtypes (" + o.dtypes +
                     "): every probe call answered ATTNCHECK_UNSUPPORTED");
  const RunSettings settings{
      .options = {.seed = report.seed, .cases = o.cases, .shrink_seconds = o.shrink_seconds,
                  .min_judged = o.min_judged, .gen = *shapes},
      .save_failures_dir = o.save_failures_dir,
  };

  std::vector<std::string> errors;
  ImplementationResult r = check_implementation(target, laws, settings, errors);
  r.insufficient_fails = !o.allow_insufficient;
  add_probe_findings(r, target);
  for (const std::string& e : errors) r.notes.push_back(e);
  report.notes = r.notes;
  for (const LawResult& l : r.laws) report.laws.push_back(public_outcome(l));
  report.console = console_text(report, o, std::move(r));
  return report;
}

}  // namespace attncheck
