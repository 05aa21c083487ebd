// Runs one law against one implementation: generates cases, and on a failure
// shrinks it (with a time cap) to the smallest case that still fails. The same
// seed gives the same cases, the same failure, the same shrink. RapidCheck
// drives it (driver/rapidcheck_runner.cpp, the one file that uses its
// internal API); nothing in this header depends on RapidCheck.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "laws/law.h"
#include "problem/gen_options.h"

namespace attncheck {

struct RunOptions {
  uint64_t seed = 1;
  int cases = 100;          // successful cases before the law passes
  int max_size = 100;       // RapidCheck size: scales shapes from tiny to the generator's caps
  double shrink_seconds = 10;  // after this, shrinking stops and keeps the smallest case so far
  // After this many process faults (crash, hang, bad write) a law stops calling
  // the implementation: the fault is reported by its process law, and a plugin
  // that hangs on most shapes must not cost a timeout per generated case.
  int max_faults = 20;
  double max_fault_seconds = 1.0;  // ... or once faulting calls have cost this long (one hang does)
  // A law that judged at least one case but fewer than this is `insufficient`,
  // not `pass` (the CLI's --min-judged, default 20; 0 here: never).
  int min_judged = 0;
  GenOptions gen;           // before the law tailors it
  // The ABI v2 features problems may use (--features); each law draws within
  // these, the implementation's declared ones and its own (Law::features).
  FeatureBits features = kEveryFeature;
};

// pass: every judged case obeyed the law (and at least min_judged were judged);
// fail: a case broke it; skipped: no case could be judged at all (the law cannot
// apply to anything the implementation offers); insufficient: some, too few.
enum class LawStatus { pass, fail, skipped, insufficient };
std::string_view law_status_name(LawStatus s);

// Why a law judged no case (LawStatus::skipped).
enum class SkipReason {
  none,            // not skipped
  not_applicable,  // the law said nothing about any generated case
  unsupported,     // the implementation answered UNSUPPORTED to the calls the law needed
  process_faults,  // every call ended in a crash, hang or bad write (judged by the process laws)
  no_cases,        // nothing was generated (e.g. --cases 0)
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
  std::string diagnosis;      // "behaves like: ..." when a fault model matches; else empty
  int shrink_steps = 0;
  // A crash, hang or bad write seen while judging this law: judged by the
  // process laws; kept here so they can report it with its case.
  std::optional<Problem> fault_case;
  std::string fault_message;
  CallStatus fault_status = CallStatus::ok;
  int faults = 0;  // process faults seen; at max_faults the law stopped early
};

LawReport run_law(const Law& law, Implementation& impl, const RunOptions& options);


}  // namespace attncheck
