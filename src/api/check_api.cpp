// attncheck::check (include/attncheck/attncheck.hpp): the CLI's `check` for one
// in-process callable. The same pieces run: the dtype and shape probes, then
// check_implementation (laws, shrinking, diagnosis, process faults charged to
// their process laws, case files), then the console's rendering; only the
// result is translated into the public types, so the public header never
// exposes an internal one.
#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "attncheck/attncheck.hpp"
#include "run/check_implementation.h"
#include "run/dtype_probe.h"
#include "run/shape_flags.h"
#include "run/shape_probe.h"
#include "impls/in_process.h"
#include "laws/law.h"
#include "report/console_report.h"

namespace attncheck {
namespace {

std::vector<DType> parse_dtypes(const std::string& text) {
  if (text == "all") return every_dtype();
  std::vector<DType> out;
  std::stringstream in(text);
  for (std::string word; std::getline(in, word, ',');) {
    const std::optional<DType> t = dtype_from_name(word);
    if (!t) throw UsageError("attncheck::check: unknown dtype '" + word + "' in Options::dtypes; choose " +
                             dtype_names() + ", a comma list of them, or all");
    if (std::find(out.begin(), out.end(), *t) == out.end()) out.push_back(*t);
  }
  if (out.empty()) throw UsageError("attncheck::check: Options::dtypes is empty; choose " + dtype_names() + " or all");
  return out;
}

uint64_t seed_of(const Options& o) {
  if (o.seed) return *o.seed;
  if (const char* s = std::getenv("ATTNCHECK_SEED"); s && *s) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(s, &end, 10);
    if (*end != 0) throw UsageError(std::string("attncheck::check: ATTNCHECK_SEED='") + s + "' is not a whole number");
    return v;
  }
  return 1;
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

std::unique_ptr<InProcessImplementation> implementation_of(const Callable& c, const Options& o) {
  if (c.forward && c.forward_v2) throw UsageError("attncheck::check: the Callable has both a v1 and a v2 forward");
  std::unique_ptr<InProcessImplementation> impl;
  if (c.forward) {
    if (c.backward_v2) throw UsageError("attncheck::check: a backward needs a v2 forward (attncheck::with_backward)");
    if (o.features) throw UsageError("attncheck::check: Options::features is for a v2 callable; this one takes v1 calls");
    impl = std::make_unique<InProcessImplementation>(o.name, c.forward);
  } else if (c.forward_v2) {
    impl = std::make_unique<InProcessImplementation>(o.name, c.forward_v2, o.features ? o.features : kV1Features,
                                                     c.backward_v2);
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
  for (const std::string& name : options.laws)
    if (!find_law(name)) {
      std::string names;
      for (const Law& l : all_laws()) names += (names.empty() ? "" : ", ") + l.name;
      throw UsageError("attncheck: unknown law '" + name + "'; the laws are: " + names);
    }
  std::vector<std::string> out;
  for (const Law& l : all_laws())
    if (options.laws.empty() ? l.in_default_catalogue
                             : std::find(options.laws.begin(), options.laws.end(), l.name) != options.laws.end())
      out.push_back(l.name);
  return out;
}

Report check(const Callable& callable, const Options& o) {
  if (o.cases < 1) throw UsageError("attncheck::check: Options::cases must be at least 1 (got " + std::to_string(o.cases) + ")");
  if (o.min_judged < 1)
    throw UsageError("attncheck::check: Options::min_judged must be at least 1 (got " + std::to_string(o.min_judged) + ")");
  if (o.name.empty()) throw UsageError("attncheck::check: Options::name is empty");
  const std::vector<DType> dtypes = parse_dtypes(o.dtypes);
  ShapeFlags flags;
  flags.profile = o.profile;
  std::string shape_error;
  const std::optional<GenOptions> shapes = shape_options(flags, shape_error);
  if (!shapes) throw UsageError("attncheck::check: " + shape_error);
  std::vector<const Law*> laws;
  for (const std::string& name : selected_laws(o)) laws.push_back(find_law(name));
  std::unique_ptr<InProcessImplementation> impl = implementation_of(callable, o);

  Report report;
  report.implementation = o.name;
  report.seed = seed_of(o);
  report.allow_insufficient = o.allow_insufficient;

  // As run_check does: ask which dtypes and shapes it takes before any law runs.
  const DTypeProbe probe = probe_dtypes(*impl, dtypes);
  if (probe.supported.empty())
    throw UsageError("attncheck::check: " + o.name + " supports none of the requested dtypes (" + o.dtypes +
                     "): every probe call answered ATTNCHECK_UNSUPPORTED");
  const ShapeFindings findings = probe_shapes(*impl, probe.supported.front());

  LawRunSettings s;
  s.options.seed = report.seed;
  s.options.cases = o.cases;
  s.options.shrink_seconds = o.shrink_seconds;
  s.options.gen = *shapes;
  s.options.gen.dtypes = probe.supported;
  restrict_to(s.options.gen, findings);
  s.options.min_judged = std::min(o.min_judged, o.cases);
  s.save_failures_dir = o.save_failures_dir;
  const bool dtype_fault = probe.fault_case.has_value();
  s.probe_fault_case = dtype_fault ? probe.fault_case : findings.fault_case;
  s.probe_fault_status = dtype_fault ? probe.fault_status : findings.fault_status;
  s.probe_fault_message = dtype_fault ? probe.fault_message : findings.fault_message;
  s.reproduce = [seed = report.seed](const std::string& law) {
    return "attncheck::check with Options::seed = " + std::to_string(seed) + ", Options::laws = {\"" + law +
           "\"} (or ATTNCHECK_SEED=" + std::to_string(seed) + " and the test of " + law + ")";
  };

  std::vector<std::string> errors;
  ImplementationResult r = check_implementation(*impl, laws, s, errors);
  r.insufficient_fails = !o.allow_insufficient;
  r.accepted_shapes = findings.describe();
  for (const DroppedDType& d : probe.dropped) r.notes.push_back(describe(d));
  for (const std::string& e : errors) r.notes.push_back(e);
  report.notes = r.notes;

  for (const LawResult& l : r.laws) {
    LawOutcome out;
    out.law = l.run.law;
    out.status = public_status(l.run.status);
    out.cases = l.run.cases;
    out.judged = l.run.judged;
    out.message = l.run.message;
    out.diagnosis = l.run.diagnosis;
    if (l.failed() && l.run.counterexample) out.failing_case = l.run.counterexample->describe();
    out.shrink_steps = l.run.shrink_steps;
    out.case_file = l.case_file;
    out.found_while = l.found_while;
    out.seconds = l.seconds;
    report.laws.push_back(std::move(out));
  }

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
  report.console = text.str();
  return report;
}

}  // namespace attncheck
