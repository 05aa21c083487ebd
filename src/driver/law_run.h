// Runs one law against one implementation: generates cases, and on a failure
// shrinks it (with a time cap) to the smallest case that still fails. The same
// seed gives the same cases, the same failure, the same shrink. RapidCheck
// drives it (driver/rapidcheck_runner.cpp, the one file that uses its
// internal API); nothing in this header depends on RapidCheck.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "law_framework/law.h"
#include "gen/gen_options.h"

namespace attncheck {

// A law that judged fewer cases than this has not earned a pass: the default
// of the CLI's --min-judged, and the floor the property tests demand
// (properties/property_env.cpp), so neither can call a law that judged 3 cases
// in 100 held. RunOptions::min_judged itself is 0 unless a caller sets it.
inline constexpr int kDefaultMinJudged = 20;

struct RunOptions {
  uint64_t seed = 1;
  int cases = 100;          // successful cases before the law passes
  int max_size = 100;       // RapidCheck size: scales shapes from tiny to the generator's caps
  double shrink_seconds = 10;  // after this, shrinking stops and keeps the smallest case so far
  // After this many process faults (crash, hang, bad write) a law stops calling
  // the implementation: the fault is reported by its process law, and a plugin
  // that hangs on most shapes must not cost a timeout per generated case.
  int max_faults = 20;
  // ... or after this many timeouts (a hang costs the whole time limit). A
  // count, not the seconds the faults took: how long a hang takes by the
  // clock depends on the machine's load, and a busy machine must not change
  // how many cases a law judges.
  int max_timeouts = 1;
  // A law that judged fewer cases than this is `insufficient`, not `pass`
  // (the CLI's --min-judged, default 20). Whatever it is, a law that judged no
  // case because its calls were refused, faulted or stopped is insufficient
  // too: only a law that cannot apply is skipped (LawStatus).
  int min_judged = 0;
  // Asked before each case (and after a refused call): a non-empty answer
  // stops the law there, and the reason is why it judged what it judged
  // (check --budget: "not run: the --budget of 30 s was spent"). Unset: never.
  std::function<std::string()> stop_reason;
  // Told the law's count of judged cases as each case is judged (a progress
  // line shows the cases of a law still running). Unset: nobody asks.
  std::function<void(int judged)> judged_so_far;
  GenOptions gen;           // before the law tailors it
  // The ABI v2 features problems may use (--features); each law draws within
  // these, the implementation's declared ones and its own (Law::features).
  // ABI v3's packing too: only laws whose features name it draw packed problems.
  FeatureBits features =
      kEveryFeature | kPackedFeature | kPagedFeature | kKvFormatsFeature | kAlibiBatchFeature | kVViewFeature |
      kBroadcastKvFeature;
};

// pass: every judged case obeyed the law, and at least min_judged (and at
// least one) were judged; fail: a case broke it; skipped: the law cannot apply
// to what the implementation declares (not applicable to any drawn case, a v1
// implementation refusing the masks or causal rules it has no way to
// declare, or left out by request); insufficient: fewer cases judged than the
// floor for any other reason (refused calls, process faults on every call,
// the run's budget spent, too few cases drawn), with the reason.
enum class LawStatus { pass, fail, skipped, insufficient };
std::string_view law_status_name(LawStatus s);

// Why a law judged no case (LawStatus::skipped). process_faults and no_cases
// are kept for the wire's and the reports' sake: such a law is insufficient now.
enum class SkipReason {
  none,            // not skipped
  not_applicable,  // the law said nothing about any generated case
  unsupported,     // a v1 implementation answered UNSUPPORTED to the masks or causal rules the law needed
  process_faults,  // (not skipped any more: insufficient) every call ended in a process fault
  no_cases,        // (not skipped any more: insufficient) nothing was generated
  by_request,      // left out by the user (check --skip-law NAME, or a config file's skip_law)
};

struct LawReport {
  std::string law;
  LawStatus status = LawStatus::pass;
  int cases = 0;              // cases drawn (judged, or discarded as not applicable/unsupported/faulting)
  int judged = 0;             // cases judged (passed, or up to and including the failure)
  // The largest extents among the judged cases, and their dtypes: what the
  // verdict covers.
  Shape largest{0, 0, 0, 0, 0, 0};
  std::vector<DType> dtypes;
  FeatureBits features = 0;   // the ABI v2 features the judged cases used, together
  std::string message;        // the failure (of the shrunk case), or why it was skipped
  SkipReason skip_reason = SkipReason::none;
  std::optional<Problem> counterexample;  // the shrunk failing case
  // The calls the failure was seen on when they are not the shrunk case alone
  // (a problem the law built from it, the pair a comparison compared), each
  // with its derivation; the case file saves law_calls.h's call_to_save.
  std::vector<LawCall> failing_calls;
  std::string diagnosis;      // "behaves like: ..." when a fault model matches; else empty
  int shrink_steps = 0;
  // A crash, hang or bad write seen while judging this law: judged by the
  // process laws; kept here so they can report it with its case.
  std::optional<Problem> fault_case;
  std::string fault_message;
  CallStatus fault_status = CallStatus::ok;
  int faults = 0;  // process faults seen; at max_faults the law stopped early
  // The features (Problem::features(), kBackwardFeature included) of the
  // calls the implementation answered (anything but UNSUPPORTED: ok, an error
  // code, a fault) and of those it refused itself (ATTNCHECK_UNSUPPORTED; not
  // the checker's own "not called: ..." answers, nor a v1 implementation's
  // refusal of masks or causal rules). finish_implementation (run/) sums them
  // over the laws: a declared feature refused on every call that used it fails.
  FeatureBits answered_features = 0;
  FeatureBits refused_features = 0;
  // The same for ABI v3's stored formats of K and V: bit (1u << f) for each
  // attncheck_kv_format f other than DTYPE that K or V of such a call used
  // (the kv_formats mask's bits). A declared format refused on every call that
  // used it fails as a declared feature does (docs/abi/plugin-abi-v3.md).
  uint32_t answered_formats = 0;
  uint32_t refused_formats = 0;
  // The accuracy grade, one per dtype (oracle/accuracy_grade.h), over the
  // judged cases of the drawn run (not the shrink's) where the law reported
  // one (Verdict::accuracy); empty for laws that do not grade.
  std::vector<AccuracyGrade> accuracy;
};

LawReport run_law(const Law& law, Implementation& impl, const RunOptions& options);


}  // namespace attncheck
