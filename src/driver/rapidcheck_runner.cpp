// The RapidCheck driver of run_law: the only place that uses rc::detail.
#include "driver/law_run.h"

#include "driver/problem_gen.h"

#include <rapidcheck.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>

namespace attncheck {

std::string_view law_status_name(LawStatus s) {
  switch (s) {
    case LawStatus::pass: return "pass";
    case LawStatus::fail: return "fail";
    case LawStatus::skipped: return "skipped";
    case LawStatus::insufficient: return "insufficient";
  }
  return "?";
}

namespace {
// RapidCheck announces its global configuration on stderr the first time it
// loads it ("Using configuration: seed=..."). attncheck passes every
// parameter explicitly and prints its own seed, so load it once in silence.
void load_rapidcheck_configuration_quietly() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::ostringstream sink;
    std::streambuf* saved = std::cerr.rdbuf(sink.rdbuf());
    (void)rc::detail::configuration();
    std::cerr.rdbuf(saved);
  });
}
// Reports go through LawReport; RapidCheck's own progress lines and its
// at-exit "reproduce with RC_PARAMS=..." summary would only confuse users.
struct SilentListener final : rc::detail::TestListener {
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};
}  // namespace

LawReport run_law(const Law& law, Implementation& impl, const RunOptions& options) {
  load_rapidcheck_configuration_quietly();
  using Clock = std::chrono::steady_clock;
  LawReport report;
  report.law = law.name;
  GenOptions gen = options.gen;
  // Problems within what the run allows, the implementation declares and the
  // law understands; the features the law is about in every problem.
  gen.features = options.features & impl.features() & law.features;
  gen.required = law.required & gen.features & ~kV1Features;
  if (law.tailor) law.tailor(gen);
  if (const FeatureBits missing = law.required & ~(options.features & impl.features())) {
    report.status = LawStatus::skipped;
    report.skip_reason = SkipReason::not_applicable;
    report.message = "not applicable: the law is about " + feature_list(missing) + ", which " +
                     ((missing & ~impl.features()) ? impl.name() + " does not declare" : std::string("the run excludes"));
    return report;
  }
  const rc::Gen<std::shared_ptr<const Problem>> problems = gen_shared_problem(gen);

  int judged = 0;
  std::string last_skip_reason;
  SkipReason last_skip = SkipReason::no_cases;
  bool failing = false;
  double fault_seconds = 0;
  Clock::time_point first_failure;
  std::optional<Problem> smallest;
  std::string smallest_message;

  // Past the fault budget a law stops calling the implementation.
  auto out_of_fault_budget = [&] {
    return report.faults >= options.max_faults || fault_seconds >= options.max_fault_seconds;
  };

  // What a judged case adds to the report's coverage.
  auto note_judged = [&](const Problem& p) {
    ++judged;
    report.largest = largest_extents(report.largest, p.shape);
    report.features |= p.features();
    if (std::find(report.dtypes.begin(), report.dtypes.end(), p.dtype) == report.dtypes.end())
      report.dtypes.push_back(p.dtype);
  };

  auto property = [&] {
    const std::shared_ptr<const Problem> drawn = *problems;  // shared with RapidCheck's shrinkable: no copy
    const Problem& p = *drawn;
    if (!failing) ++report.cases;
    if (failing) {
      // Shrinking: past the cap, every further candidate "passes", which ends
      // the search and keeps the smallest failing case found so far.
      if (Clock::now() - first_failure > std::chrono::duration<double>(options.shrink_seconds)) return;
    }
    if (out_of_fault_budget()) RC_DISCARD("stopped after repeated process faults");
    const Clock::time_point call_start = Clock::now();
    const Verdict v = law.check(impl, p);
    switch (v.status) {
      case VerdictStatus::pass:
        if (!failing) note_judged(p);
        return;
      case VerdictStatus::fail:
        if (!failing) { note_judged(p); failing = true; first_failure = Clock::now(); }
        else ++report.shrink_steps;
        smallest = p;
        smallest_message = v.message;
        RC_FAIL(v.message);
      case VerdictStatus::fault:
        ++report.faults;
        fault_seconds += std::chrono::duration<double>(Clock::now() - call_start).count();
        if (!report.fault_case) {
          report.fault_case = p;
          report.fault_message = v.message;
          report.fault_status = v.call_status;
        }
        RC_DISCARD("process fault: " + v.message);
      case VerdictStatus::unsupported:
        last_skip_reason = "unsupported: " + v.message;
        last_skip = SkipReason::unsupported;
        RC_DISCARD(last_skip_reason);
      case VerdictStatus::not_applicable:
        last_skip_reason = "not applicable: " + v.message;
        last_skip = SkipReason::not_applicable;
        RC_DISCARD(last_skip_reason);
    }
  };

  rc::detail::TestParams params;
  params.seed = options.seed;
  params.maxSuccess = options.cases;
  params.maxSize = options.max_size;
  params.maxDiscardRatio = 10;
  rc::detail::TestMetadata metadata;
  metadata.id = law.name + "/" + impl.name();
  metadata.description = metadata.id;
  SilentListener silent;
  const rc::detail::TestResult result =
      rc::detail::checkProperty(rc::detail::toProperty(property), metadata, params, silent, {});

  report.judged = judged;
  if (smallest) {
    report.status = LawStatus::fail;
    report.counterexample = smallest;
    report.message = smallest_message;
  } else if (judged == 0) {
    report.status = LawStatus::skipped;
    report.skip_reason = report.faults > 0 ? SkipReason::process_faults : last_skip;
    report.message = report.faults > 0 ? "no case could be judged: every call ended in a process fault (" +
                                             report.fault_message + ")"
                     : last_skip_reason.empty() ? "no case could be judged"
                                                : last_skip_reason;
  } else {
    if (out_of_fault_budget())
      report.message = "stopped early after " + std::to_string(report.faults) + " process faults; " +
                       std::to_string(judged) + " case(s) judged";
    report.status = LawStatus::pass;
    if (!result.template is<rc::detail::SuccessResult>() && !result.template is<rc::detail::GaveUpResult>()) {
      report.status = LawStatus::fail;
      report.message = "the property driver reported an error";
    } else if (judged < options.min_judged) {
      // A verdict must be earned: too few judged cases are not a pass.
      report.status = LawStatus::insufficient;
      report.message = "judged " + std::to_string(judged) + " of " + std::to_string(report.cases) +
                       " drawn case(s), fewer than the floor of " + std::to_string(options.min_judged) +
                       (last_skip_reason.empty() ? std::string() : "; the others: " + last_skip_reason);
    }
  }
  return report;
}

}  // namespace attncheck
