#include "run/check_implementation.h"

#include <chrono>
#include <ctime>

#include "casefile/case_file.h"
#include "diagnosis/diagnose.h"
#include "problem/fnv1a.h"

namespace attncheck {
namespace {

// A crash, hang or bad write fails the process law that judges it, unless
// that law already failed on its own. A process law left out by --law is
// added: a fault is never silent.
void charge_fault(ImplementationResult& r, CallStatus status, const Problem& fault_case, const std::string& message,
                  const std::string& found_while) {
  const Law* judge = process_law_for(status);
  if (!judge) return;
  LawResult* target = nullptr;
  for (LawResult& l : r.laws)
    if (l.run.law == judge->name) target = &l;
  if (!target) {
    r.laws.push_back(LawResult{});
    target = &r.laws.back();
    target->run.law = judge->name;
    target->run.cases = 0;
  } else if (target->failed()) {
    return;
  }
  target->run.status = LawStatus::fail;
  target->run.message = message;
  target->run.counterexample = fault_case;
  target->run.shrink_steps = 0;
  target->found_while = found_while;
}

// Faults provoked by another law's case (or by the shape probe before the laws ran).
void charge_process_faults(ImplementationResult& r, const LawRunSettings& settings) {
  const std::size_t judged = r.laws.size();
  for (std::size_t k = 0; k < judged; ++k) {
    if (!r.laws[k].run.fault_case) continue;
    // Copied: r.laws may grow in charge_fault.
    const LawReport run = r.laws[k].run;
    charge_fault(r, run.fault_status, *run.fault_case, run.fault_message, run.law);
  }
  if (settings.probe_fault_case)
    charge_fault(r, settings.probe_fault_status, *settings.probe_fault_case, settings.probe_fault_message,
                 "the probe of dtypes and shapes (before the laws ran)");
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
  for (FeatureBits bit = 1; bit <= kBackwardFeature; bit <<= 1) {
    if (!(refused & bit) || (answered & bit)) continue;
    const std::string message =
        "declares " + feature_list(bit) + (bit == kBackwardFeature ? " (its backward is not NULL)" : "") +
        " but answered ATTNCHECK_UNSUPPORTED to every call that used it; a declared feature refused on every call "
        "that uses it is a failure (include/attncheck/plugin_v2.h)";
    std::vector<LawResult*> about, drew;
    for (LawResult& l : r.laws) {
      if (!(l.run.refused_features & bit)) continue;
      drew.push_back(&l);
      if (const Law* law = find_law(l.run.law); law && (law->required & bit)) about.push_back(&l);
    }
    if (about.empty()) about.push_back(drew.front());
    for (LawResult* l : about) {
      if (l->failed()) continue;  // its own failure says more; the run fails either way
      l->run.status = LawStatus::fail;
      l->run.skip_reason = SkipReason::none;
      l->run.message = message;
    }
  }
}

// Whether any law judged a call of the implementation that completed: a
// process law's own failure is its fault, not a completed call (its judged
// count includes it); a fault charged to a process law is not in its count.
bool completed_a_judged_call(const ImplementationResult& r) {
  for (const LawResult& l : r.laws) {
    const bool own_fault = l.failed() && is_process_law(l.run.law) && l.found_while.empty();
    if (l.run.judged - (own_fault ? 1 : 0) > 0) return true;
  }
  return false;
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

LawResult check_law(Implementation& impl, const Law& law, const LawRunSettings& settings) {
  using Clock = std::chrono::steady_clock;
  RunOptions o = settings.options;
  o.seed = law_seed(settings.options.seed, law.name);
  o.stop_reason = settings.stop_reason;
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
  if (settings.only_laws_requiring && !(law.required & settings.only_laws_requiring)) {
    l.run.status = LawStatus::skipped;
    l.run.skip_reason = SkipReason::by_request;
    l.run.message = settings.only_reason;
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

ImplementationResult finish_implementation(std::string name, std::string source, std::vector<LawResult> laws,
                                           const LawRunSettings& settings, std::vector<std::string>& errors) {
  ImplementationResult r;
  r.name = std::move(name);
  r.source = std::move(source);
  r.dtypes = settings.options.gen.dtypes;
  r.laws = std::move(laws);
  charge_process_faults(r, settings);
  fail_refused_features(r);

  for (LawResult& l : r.laws)
    if (const ExpectedFailure* e = settings.expected_failure ? settings.expected_failure(l.run.law) : nullptr) {
      if (e->strict || l.failed())
        l.expected_failure = e->reason;
      else if (l.run.status == LawStatus::pass)
        l.passed_despite = e->reason;
    }
  // An expected failure never turns an implementation that completed no
  // judged call (every call crashed, say) into a pass: its declared failures
  // count as failures then.
  if (!completed_a_judged_call(r))
    for (LawResult& l : r.laws)
      if (l.expected_fail()) {
        l.run.message += "; declared an expected failure" +
                         (l.expected_failure->empty() ? std::string() : " (" + *l.expected_failure + ")") +
                         ", not honoured: no call of " + r.name +
                         " completed a judged case, and an expected failure never makes that a pass";
        l.expected_failure.reset();
      }

  for (LawResult& l : r.laws) {
    if (l.passed_despite) r.notes.push_back(passed_despite_note(l));
    if (!l.failed()) continue;
    const std::string& repro_law = l.found_while.empty() ? l.run.law : l.found_while;
    if (settings.reproduce) l.reproduce = settings.reproduce(repro_law);
    if (!l.run.counterexample || settings.save_failures_dir.empty()) continue;
    CaseRecord c = failure_record(*l.run.counterexample, l.run.law, r.name, r.source, settings.found_by,
                                  settings.options.seed, l.run.message, l.run.diagnosis);
    // Replayed as recorded, the case must fail again where its failure was expected.
    c.expect = settings.must_fail || l.expected_failure ? "fail" : "pass";
    try {
      l.case_file = save_case(c, settings.save_failures_dir);
    } catch (const std::exception& e) {
      errors.push_back(std::string("cannot save the failing case of ") + l.run.law + " for " + r.name + ": " +
                       e.what());
    }
  }
  return r;
}

ImplementationResult check_implementation(Implementation& impl, const std::vector<const Law*>& laws,
                                          const LawRunSettings& settings, std::vector<std::string>& errors) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::vector<LawResult> results;
  for (const Law* law : laws) results.push_back(check_law(impl, *law, settings));
  ImplementationResult r = finish_implementation(impl.name(), impl.source(), std::move(results), settings, errors);
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

}  // namespace attncheck
