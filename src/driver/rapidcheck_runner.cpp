// The RapidCheck driver of run_law: the only place that uses rc::detail.
#include "driver/law_run.h"

#include "driver/problem_gen.h"
#include "law_framework/law_calls.h"

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

namespace {

// "not called: ..." is how the checker itself answers for an implementation it
// will not call (the --budget spent, a plugin that could not be restarted or
// loaded again): a case left unjudged, but not the implementation's own
// refusal, so it says nothing about the features it serves. (A plugin whose
// own error text starts so only moves its refusals from "fail" to
// "insufficient": neither passes.)
bool refused_by_the_checker(const std::string& message) { return message.starts_with("not called:"); }

// The implementation as a law calls it: every call passes through, and the
// features of the calls it answered and of those it refused are noted call
// by call (a law's own derived calls included: masked_keys_ignored refuses
// on the masked call it makes, not on the drawn case).
// A shape the run's generator would never draw (the shape probe found the
// implementation refuses it, or --head-dim left it out): a law's own call of
// such a shape (logit_shift_invariance's head_dim + 1) that is refused cannot
// apply, as a feature the implementation does not declare cannot.
bool outside_drawn_shapes(const Shape& s, const GenOptions& g) {
  return (!g.head_dims.empty() && std::find(g.head_dims.begin(), g.head_dims.end(), s.head_dim) == g.head_dims.end()) ||
         (g.same_dims && s.value_dim != s.head_dim) || (g.max_q_len == 1 && s.q_len != 1) ||
         (g.q_len_multiple > 1 && s.q_len % g.q_len_multiple != 0) ||
         (g.kv_len_multiple > 1 && s.kv_len % g.kv_len_multiple != 0);
}

// The stored formats of a call's K and V, as kv_formats bits (DTYPE's left out:
// every call has it).
uint32_t formats_of(const Problem& p) {
  uint32_t bits = 0;
  for (const KvFormat f : {p.k_format, p.v_format})
    if (f != KvFormat::dtype) bits |= 1u << static_cast<int>(f);
  return bits;
}

class NotingImplementation final : public Implementation {
 public:
  NotingImplementation(Implementation& inner, const GenOptions& run_shapes)
      : inner_(inner), v1_(inner.features() == kV1Features), run_shapes_(run_shapes) {}
  std::string name() const override { return inner_.name(); }
  std::string source() const override { return inner_.source(); }
  FeatureBits features() const override { return inner_.features(); }
  uint32_t promises() const override { return inner_.promises(); }
  uint32_t kv_formats() const override { return inner_.kv_formats(); }
  uint32_t numerics() const override { return inner_.numerics(); }
  bool shift_buffers(std::size_t bytes) override { return inner_.shift_buffers(bytes); }
  Outcome run(const Problem& p) override {
    Outcome o = inner_.run(p);
    // The call a process fault ended: a law's own derived call (V = identity,
    // hidden keys) may crash where its case does not; the fault's case is that call.
    if (!faulted_call && o.status != CallStatus::ok && o.status != CallStatus::unsupported &&
        o.status != CallStatus::error)
      faulted_call = p;
    const FeatureBits used = p.features();
    const uint32_t formats = formats_of(p);
    if (o.status != CallStatus::unsupported) {
      answered |= used;
      answered_formats |= formats;
    } else if (used & ~inner_.features()) {
      // A law's own call with a feature the implementation does not declare
      // (masked_keys_ignored's masked call, to a v2 plugin without MASK):
      // never sent, and the law cannot apply, as if it required the feature.
      cannot_apply = true;
    } else if (outside_drawn_shapes(p.shape, run_shapes_)) {
      cannot_apply = true;  // as above: the law's call leaves the shapes it may use
    } else if (refused_by_the_checker(o.message)) {
      not_called = true;
    } else if (v1_ && (used & kV1Features)) {
      // A v1 implementation takes masks and causal rules with no way to
      // declare them: its UNSUPPORTED for one is the "cannot apply" of a v2
      // feature it does not declare, not a refusal of a declared feature.
      refused_v1_feature = true;
    } else {
      refused |= used;
      refused_formats |= formats;
    }
    return o;
  }
  FeatureBits answered = 0, refused = 0;
  uint32_t answered_formats = 0, refused_formats = 0;  // kv_formats bits, LawReport's
  // Since the last reset (the law's current case): a refusal of a mask or
  // causal rule by a v1 implementation; a refused call with an undeclared
  // feature or of a shape the run never draws; a call the checker did not make.
  bool refused_v1_feature = false, cannot_apply = false, not_called = false;
  // Since the last reset: the first call that ended in a process fault.
  std::optional<Problem> faulted_call;

 private:
  Implementation& inner_;
  const bool v1_;
  const GenOptions& run_shapes_;
};

// Why drawn cases went unjudged, kept to say why a law is insufficient.
struct Unjudged {
  int not_applicable = 0, refused = 0, v1_refused = 0, not_called = 0, incomplete = 0, stopped = 0;
  std::string not_applicable_why, refused_why, not_called_why, incomplete_why, stop_why;
  int backward_faults = 0;  // backward problems whose call ended in a process fault
  int backward_judged = 0;

  // "3 answered UNSUPPORTED (last: ...), 2 ended in a process fault (first: ...)".
  std::string describe(const LawReport& r) const {
    std::string s;
    auto add = [&](int n, const std::string& what, const std::string& why) {
      if (n == 0) return;
      s += (s.empty() ? "" : "; ") + std::to_string(n) + " " + what + (why.empty() ? "" : " (" + why + ")");
    };
    add(refused, "answered UNSUPPORTED", refused_why.empty() ? "" : "last: " + refused_why);
    if (not_called) s += (s.empty() ? "" : "; ") + std::to_string(not_called) + " " + not_called_why;
    add(r.faults, "ended in a process fault", r.fault_message.empty() ? "" : "first: " + r.fault_message);
    add(incomplete, "returned before the part the law judges", incomplete_why.empty() ? "" : "last: " + incomplete_why);
    add(not_applicable, "not applicable", not_applicable_why.empty() ? "" : "last: " + not_applicable_why);
    if (stopped) s += (s.empty() ? "" : "; ") + std::string(s.empty() ? "" : "the rest ") + stop_why;
    return s;
  }
  bool only_faults(const LawReport& r) const {
    return r.faults > 0 && refused == 0 && not_called == 0 && incomplete == 0 && stopped == 0 && not_applicable == 0;
  }
  // Nothing but "the law cannot apply" kept the law from judging.
  bool only_cannot_apply(const LawReport& r) const {
    return r.faults == 0 && refused == v1_refused && not_called == 0 && incomplete == 0 && stopped == 0 &&
           not_applicable + v1_refused > 0;
  }
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
  gen.kv_formats = impl.kv_formats();  // the stored formats it offers (with kKvFormatsFeature)
  gen.numerics = impl.numerics();      // the numerics it declares: set on the calls they apply to
  if (law.tailor) law.tailor(gen);
  if (const FeatureBits missing = law.required & ~(options.features & impl.features())) {
    report.status = LawStatus::skipped;
    report.skip_reason = SkipReason::not_applicable;
    report.message = "not applicable: the law is about " + feature_list(missing) + ", which " +
                     ((missing & ~impl.features()) ? impl.name() + " does not declare" : std::string("the run excludes"));
    return report;
  }
  if (const uint32_t missing = law.required_promises & ~impl.promises()) {
    report.status = LawStatus::skipped;
    report.skip_reason = SkipReason::not_applicable;
    // "does not declare", as for a feature: reports and scripts read a skip
    // for want of a declaration by those words.
    report.message = "not applicable: the law judges " + promise_list(missing) + " (ABI version 3), which " +
                     impl.name() + " does not declare (attncheck_impl_v3::promises)";
    return report;
  }
  if (law.formats_needed)
    if (const std::string needs = law.formats_needed(impl.kv_formats()); !needs.empty()) {
      report.status = LawStatus::skipped;
      report.skip_reason = SkipReason::not_applicable;
      report.message = "not applicable: the law needs " + needs + " in kv_formats, which " + impl.name() +
                       " does not declare (attncheck_impl_v3::kv_formats)";
      return report;
    }
  const rc::Gen<std::shared_ptr<const Problem>> problems = gen_shared_problem(gen);
  NotingImplementation noting(impl, options.gen);

  int judged = 0;
  Unjudged unjudged;
  bool failing = false;
  int timeouts = 0;
  Clock::time_point first_failure;
  std::optional<Problem> smallest;
  std::string smallest_message;
  std::vector<LawCall> smallest_calls;
  std::vector<AccuracyCase> accuracy;  // the drawn cases' grades (not the shrink's)

  // Past the fault budget a law stops calling the implementation.
  auto out_of_fault_budget = [&] {
    return report.faults >= options.max_faults || timeouts >= options.max_timeouts;
  };
  auto stop_reason = [&] { return options.stop_reason ? options.stop_reason() : std::string(); };

  // What a judged case adds to the report's coverage.
  auto note_judged = [&](const Problem& p) {
    ++judged;
    if (options.judged_so_far) options.judged_so_far(judged);
    if (p.is_backward()) ++unjudged.backward_judged;
    report.largest = largest_extents(report.largest, p.shape);
    report.features |= p.features();
    if (std::find(report.dtypes.begin(), report.dtypes.end(), p.dtype) == report.dtypes.end())
      report.dtypes.push_back(p.dtype);
  };

  auto property = [&] {
    if (!failing) {
      // Stopped (the run's budget): no case is drawn or called past it.
      if (std::string why = stop_reason(); !why.empty()) {
        unjudged.stop_why = std::move(why);
        ++unjudged.stopped;
        RC_DISCARD(unjudged.stop_why);
      }
    }
    const std::shared_ptr<const Problem> drawn = *problems;  // shared with RapidCheck's shrinkable: no copy
    const Problem& p = *drawn;
    if (!failing) ++report.cases;
    if (failing) {
      // Shrinking: past the cap, every further candidate "passes", which ends
      // the search and keeps the smallest failing case found so far.
      if (Clock::now() - first_failure > std::chrono::duration<double>(options.shrink_seconds)) return;
    }
    if (out_of_fault_budget()) RC_DISCARD("stopped after repeated process faults");
    noting.refused_v1_feature = noting.cannot_apply = noting.not_called = false;
    noting.faulted_call.reset();
    const Verdict v = law.check(noting, p);
    switch (v.status) {
      case VerdictStatus::pass:
        if (!failing) note_judged(p);
        if (!failing && v.accuracy) accuracy.push_back(*v.accuracy);
        return;
      case VerdictStatus::fail:
        if (!failing && v.accuracy) accuracy.push_back(*v.accuracy);
        if (!failing) { note_judged(p); failing = true; first_failure = Clock::now(); }
        else ++report.shrink_steps;
        smallest = p;
        smallest_message = v.message;
        smallest_calls = v.calls;
        RC_FAIL(v.message);
      case VerdictStatus::fault:
        ++report.faults;
        if (!failing && p.is_backward()) ++unjudged.backward_faults;
        if (v.call_status == CallStatus::timeout) ++timeouts;
        if (!report.fault_case) {
          report.fault_case = noting.faulted_call ? *noting.faulted_call : p;
          report.fault_message = v.message;
          report.fault_status = v.call_status;
        }
        RC_DISCARD("process fault: " + v.message);
      case VerdictStatus::unsupported:
        if (!failing) {
          // Refused because the run stopped meanwhile: the stop, not a refusal.
          if (std::string why = stop_reason(); !why.empty()) {
            unjudged.stop_why = std::move(why);
            ++unjudged.stopped;
            --report.cases;
            RC_DISCARD(unjudged.stop_why);
          }
          if (noting.cannot_apply) {
            ++unjudged.not_applicable;
            unjudged.not_applicable_why = v.message;
          } else if (noting.not_called) {
            ++unjudged.not_called;
            unjudged.not_called_why = v.message;
          } else {
            ++unjudged.refused;
            unjudged.refused_why = v.message;
            if (noting.refused_v1_feature) ++unjudged.v1_refused;
          }
        }
        RC_DISCARD("unsupported: " + v.message);
      case VerdictStatus::incomplete:
        if (!failing) {
          ++unjudged.incomplete;
          unjudged.incomplete_why = v.message;
        }
        RC_DISCARD("incomplete: " + v.message);
      case VerdictStatus::not_applicable:
        if (!failing) {
          ++unjudged.not_applicable;
          unjudged.not_applicable_why = v.message;
        }
        RC_DISCARD("not applicable: " + v.message);
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
  report.accuracy = summarise_accuracy(accuracy);
  report.answered_features = noting.answered;
  report.refused_features = noting.refused;
  report.answered_formats = noting.answered_formats;
  report.refused_formats = noting.refused_formats;
  const std::string drawn = std::to_string(report.cases) + " drawn case(s)";
  if (smallest) {
    report.status = LawStatus::fail;
    report.counterexample = smallest;
    report.message = smallest_message;
    complete_calls(*smallest, smallest_calls);
    report.failing_calls = std::move(smallest_calls);
  } else if (!result.template is<rc::detail::SuccessResult>() && !result.template is<rc::detail::GaveUpResult>()) {
    report.status = LawStatus::fail;
    report.message = "the property driver reported an error";
  } else if (judged == 0 && unjudged.only_cannot_apply(report)) {
    // The law cannot apply to what the implementation declares: skipped.
    report.status = LawStatus::skipped;
    const bool v1 = unjudged.v1_refused > 0;
    report.skip_reason = v1 ? SkipReason::unsupported : SkipReason::not_applicable;
    report.message = v1 ? "unsupported: " + unjudged.refused_why + " (a v1 implementation cannot declare masks "
                                                                   "or causal rules)"
                        : "not applicable: " + unjudged.not_applicable_why;
  } else if (judged == 0 || judged < options.min_judged) {
    // A verdict must be earned: too few judged cases are not a pass, and no
    // judged case at all, whatever kept the law from judging, is not a skip.
    report.status = LawStatus::insufficient;
    const std::string why = unjudged.describe(report);
    if (judged == 0 && unjudged.only_faults(report))
      report.message = "no case could be judged: every call ended in a process fault (" + report.fault_message + ")";
    else if (judged == 0 && report.cases == 0)
      report.message = unjudged.stopped ? unjudged.stop_why : "no case was judged: none was drawn";
    else
      report.message = "judged " + std::to_string(judged) + " of " + drawn +
                       (options.min_judged > judged ? ", fewer than the floor of " + std::to_string(options.min_judged)
                                                    : std::string()) +
                       (why.empty() ? std::string() : "; " + why);
  } else if (unjudged.backward_faults > 0 && unjudged.backward_judged == 0) {
    // A law that judges backward calls too (the process laws) judged none:
    // every one ended in a process fault. Its forward calls alone earn no pass.
    report.status = LawStatus::insufficient;
    report.message = "judged " + std::to_string(judged) + " forward call(s) but no backward call: all " +
                     std::to_string(unjudged.backward_faults) + " backward call(s) ended in a process fault (" +
                     report.fault_message + ")";
  } else if (std::string why = law.decides_on_accuracy ? accuracy_verdict(accuracy) : std::string(); !why.empty()) {
    // A decision over every graded case: no single case is the counterexample.
    report.status = LawStatus::fail;
    report.message = "errors systematically beyond the typical-error model: " + why;
  } else {
    report.status = LawStatus::pass;
    if (out_of_fault_budget())
      report.message = "stopped early after " + std::to_string(report.faults) + " process faults; " +
                       std::to_string(judged) + " case(s) judged";
  }
  return report;
}

}  // namespace attncheck
