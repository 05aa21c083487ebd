#include "run/check_implementation.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>

#include "casefile/case_file.h"
#include "diagnosis/diagnose.h"
#include "law_framework/process_law.h"
#include "problem/fnv1a.h"
#include "run/failure_case.h"

namespace attncheck {
namespace {

// The faults seen under other laws' cases and in the probes fail the process
// laws that judge them, as law_framework/process_law.h decides; a process law left out
// by --law is added (a fault is never silent).
void charge_faults_seen(ImplementationResult& r, const std::optional<ProcessFault>& probe_fault) {
  std::vector<ProcessFault> seen;
  for (const LawResult& l : r.laws)
    if (l.run.fault_case) seen.push_back({l.run.fault_status, *l.run.fault_case, l.run.fault_message, l.run.law});
  if (probe_fault) seen.push_back(*probe_fault);
  auto result_of = [&r](const std::string& law) -> LawResult* {
    for (LawResult& l : r.laws)
      if (l.run.law == law) return &l;
    return nullptr;
  };
  const std::vector<ProcessLawCharge> charges = charge_process_faults(seen, [&](const Law& law) {
    const LawResult* l = result_of(law.name);
    return l && l->failed();
  });
  for (const ProcessLawCharge& c : charges) {
    LawResult* l = result_of(c.law->name);
    if (!l) {
      r.laws.push_back(LawResult{});
      l = &r.laws.back();
      l->run.law = c.law->name;
      l->run.cases = 0;
    }
    l->run.status = LawStatus::fail;
    l->run.message = c.fault->message;
    l->run.counterexample = c.fault->call;
    l->run.shrink_steps = 0;
    l->found_while = c.fault->found_while;
  }
}

// Fails, with `message`, the laws that drew a refused declaration (`drew`) and
// are about it (`about`); when none of them is about it, the first that drew
// it. A law that failed on its own keeps its message (it says more; the run
// fails either way).
void fail_laws_that_drew(ImplementationResult& r, const std::string& message,
                         const std::function<bool(const LawResult&)>& drew,
                         const std::function<bool(const Law&)>& about_it) {
  std::vector<LawResult*> about, drawn;
  for (LawResult& l : r.laws) {
    if (!drew(l)) continue;
    drawn.push_back(&l);
    if (const Law* law = find_law(l.run.law); law && about_it(*law)) about.push_back(&l);
  }
  if (about.empty()) about.push_back(drawn.front());
  for (LawResult* l : about) {
    if (l->failed()) continue;
    l->run.status = LawStatus::fail;
    l->run.skip_reason = SkipReason::none;
    l->run.message = message;
  }
}

// The pinned v2 contract (include/attncheck/plugin_v2.h): "a declared feature
// refused on every call that uses it is a failure". Over all the laws run: a
// feature some drawn case used (so the implementation declares it: nothing
// else is drawn) that it answered ATTNCHECK_UNSUPPORTED every time. The laws
// about that feature fail with the reason, or, when none of them drew it, the
// first law that did; a refusal of a finer limit (a head_dim, a dtype) leaves
// other calls with the feature answered and fails nothing.
void fail_refused_features(ImplementationResult& r) {
  FeatureBits answered = 0, refused = 0;
  for (const LawResult& l : r.laws) {
    answered |= l.run.answered_features;
    refused |= l.run.refused_features;
  }
  for (FeatureBits bit = 1; bit <= kLastFeatureBit; bit <<= 1) {
    if (!(refused & bit) || (answered & bit)) continue;
    const std::string message =
        "declares " + feature_list(bit) + (bit == kBackwardFeature ? " (its backward is not NULL)" : "") +
        " but answered ATTNCHECK_UNSUPPORTED to every call that used it; a declared feature refused on every call "
        "that uses it is a failure (include/attncheck/plugin_v2.h)";
    fail_laws_that_drew(
        r, message, [bit](const LawResult& l) { return (l.run.refused_features & bit) != 0; },
        [bit](const Law& law) { return (law.required & bit) != 0; });
  }
}

// The same for version 3's stored formats (docs/abi/plugin-abi-v3.md, "What the
// checker verifies": "a declared format refused on every call that uses it is a
// failure"): a format of kv_formats that K or V of some drawn call used and
// that every such call was refused. The laws that require KV_FORMATS fail with
// the reason. A refusal of a finer limit (a format only for K, not mixed with
// another, not at some head_dim) leaves other calls with it answered.
void fail_refused_formats(ImplementationResult& r) {
  uint32_t answered = 0, refused = 0;
  for (const LawResult& l : r.laws) {
    answered |= l.run.answered_formats;
    refused |= l.run.refused_formats;
  }
  for (const KvFormatInfo& f : all_kv_formats()) {
    const uint32_t bit = 1u << static_cast<int>(f.format);
    if (!(refused & bit) || (answered & bit)) continue;
    const std::string message =
        "offers " + std::string(f.name) + " in kv_formats but answered ATTNCHECK_UNSUPPORTED to every call with K or V "
        "stored as " + std::string(f.name) + "; a declared format refused on every call that uses it is a failure "
        "(docs/abi/plugin-abi-v3.md)";
    fail_laws_that_drew(
        r, message, [bit](const LawResult& l) { return (l.run.refused_formats & bit) != 0; },
        [](const Law& law) { return (law.required & kKvFormatsFeature) != 0; });
  }
}

// Whether any law judged a call of the implementation that completed
// (law_framework/process_law.h: a process law's own failure is a call that did not).
bool completed_a_judged_call(const ImplementationResult& r) {
  for (const LawResult& l : r.laws)
    if (completed_judged_calls(l.run.law, l.run.judged, l.failed() && l.found_while.empty()) > 0) return true;
  return false;
}

// The declared expected failures (--expect-fail, --config), except for an
// implementation that completed no judged call (every call crashed, say):
// an expected failure never turns that into a pass, so its declared
// failures count as failures then.
void apply_expectations(ImplementationResult& r, const Expectations* expectations) {
  for (LawResult& l : r.laws)
    if (const ExpectedFailure* e = expectations ? expectations->find(r.name, l.run.law) : nullptr) {
      if (e->strict || l.failed())
        l.expected_failure = e->reason;
      else if (l.run.status == LawStatus::pass)
        l.passed_despite = e->reason;
    }
  if (completed_a_judged_call(r)) return;
  for (LawResult& l : r.laws)
    if (l.expected_fail()) {
      l.run.message += "; declared an expected failure" +
                       (l.expected_failure->empty() ? std::string() : " (" + *l.expected_failure + ")") +
                       ", not honoured: no call of " + r.name +
                       " completed a judged case, and an expected failure never makes that a pass";
      l.expected_failure.reset();
    }
}

}  // namespace

uint64_t law_seed(uint64_t run_seed, std::string_view law) {
  Fnv1a name(Fnv1a::kSeedBasis);
  name.bytes(law.data(), law.size());
  uint64_t z = run_seed ^ name.value;  // then one splitmix64 round
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

RunOptions law_options(const RunSettings& settings, const Target& target) {
  RunOptions o = settings.options;
  if (target.probes) {
    o.gen.dtypes = target.probes->dtypes.supported;
    restrict_to(o.gen, target.probes->shapes);
  }
  o.min_judged = std::min(o.min_judged, o.cases);
  return o;
}

LawResult check_law(Implementation& impl, const Law& law, const Target& target, const RunSettings& settings) {
  using Clock = std::chrono::steady_clock;
  RunOptions o = law_options(settings, target);
  o.seed = law_seed(settings.options.seed, law.name);
  o.stop_reason = settings.stop_reason;
  o.judged_so_far = settings.judged_so_far;
  LawResult l;
  l.run.law = law.name;
  l.run.cases = 0;
  // Stopped before it started (the budget spent): it judged nothing, for want
  // of time, not because it cannot apply.
  if (std::string why = settings.stop_reason ? settings.stop_reason() : ""; !why.empty()) {
    l.run.status = LawStatus::insufficient;
    l.run.message = why;
    return l;
  }
  // The embedded default's choice of laws for some zoo members: by request.
  if (target.only_laws_promising ? !(law.required_promises & target.only_laws_promising)
                                 : target.only_laws_requiring && !(law.required & target.only_laws_requiring)) {
    l.run.status = LawStatus::skipped;
    l.run.skip_reason = SkipReason::by_request;
    l.run.message = target.only_reason;
    return l;
  }
  const auto law_start = Clock::now();
  l.run = run_law(law, impl, o);
  l.seconds = std::chrono::duration<double>(Clock::now() - law_start).count();
  // The fault models explain numbers; a crash or a hang has none to explain.
  // Diagnosed here, right after the law, on the instance that failed it: the
  // process faults charged later (finish_implementation) never get a diagnosis.
  if (l.failed() && l.run.counterexample && !is_process_law(l.run.law))
    l.run.diagnosis = diagnose(impl, *l.run.counterexample);
  return l;
}

FinishFacts finish_facts(const Target& target, const RunSettings& settings) {
  return FinishFacts{.name = target.name,
                     .source = target.source,
                     .dtypes = law_options(settings, target).gen.dtypes,
                     .expectation = target.expectation,
                     .reproduce = target.reproduce,
                     .probe_fault = target.probes ? target.probes->fault() : std::nullopt};
}

ImplementationResult finish_implementation(const Target& target, std::vector<LawResult> laws,
                                           const RunSettings& settings, std::vector<std::string>& errors) {
  return finish_results(finish_facts(target, settings), std::move(laws), settings, errors);
}

ImplementationResult finish_results(const FinishFacts& target, std::vector<LawResult> laws,
                                    const RunSettings& settings, std::vector<std::string>& errors) {
  ImplementationResult r;
  r.name = target.name;
  r.source = target.source;
  r.dtypes = target.dtypes;
  r.laws = std::move(laws);
  charge_faults_seen(r, target.probe_fault);
  fail_refused_features(r);
  fail_refused_formats(r);
  apply_expectations(r, settings.expectations);

  for (LawResult& l : r.laws) {
    if (l.passed_despite) r.notes.push_back(passed_despite_note(l));
    if (!l.failed()) continue;
    const std::string& repro_law = l.found_while.empty() ? l.run.law : l.found_while;
    if (target.reproduce) l.reproduce = target.reproduce(repro_law);
    if (!l.run.counterexample || settings.save_failures_dir.empty()) continue;
    CaseRecord c = law_failure_record(l.run, r.name, r.source, settings.found_by, settings.options.seed);
    // Replayed as recorded, the case must fail again where its failure was expected.
    const bool must_fail = target.expectation == Expectation::must_be_caught;
    c.expect = must_fail || l.expected_failure ? "fail" : "pass";
    try {
      l.case_file = save_case(c, settings.save_failures_dir);
    } catch (const std::exception& e) {
      errors.push_back(std::string("cannot save the failing case of ") + l.run.law + " for " + r.name + ": " +
                       e.what());
    }
  }
  return r;
}

void add_probe_findings(ImplementationResult& r, const Target& target) {
  if (!target.probes) return;
  r.accepted_shapes = target.probes->shapes.describe();
  r.not_checked = target.probes->not_judged;
  for (const DroppedDType& d : target.probes->dtypes.dropped) r.notes.push_back(describe(d));
}

ImplementationResult check_implementation(Target& target, const std::vector<const Law*>& laws,
                                          const RunSettings& settings, std::vector<std::string>& errors) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::vector<LawResult> results;
  for (const Law* law : laws) results.push_back(check_law(*target.loaded, *law, target, settings));
  for (const Law* law : target.extra_laws) results.push_back(check_law(*target.loaded, *law, target, settings));
  ImplementationResult r = finish_implementation(target, std::move(results), settings, errors);
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

}  // namespace attncheck
