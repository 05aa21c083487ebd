// What a fuzz target does when a law fails: the failing call is saved as a
// regression case file (so `attncheck replay FILE` reproduces it and the
// regression suite keeps it forever), printed, and then the process aborts so
// that libFuzzer also keeps its own crash-* input. A failure seen on calls the
// law built from `p` (Verdict::calls) saves the call law_calls.h's
// call_to_save picks, with its derivation, as check --save-failures does.
//
// Case files go to $ATTNCHECK_REGRESSION_DIR (default ./regressions).
//
// Example usage:
//   const Verdict v = law.check(impl, p);
//   if (v.failed()) report_finding(p, law.name, impl, v.message, v.calls);
#pragma once

#include <string>
#include <vector>

#include "impls/implementation.h"
#include "law_framework/law.h"
#include "problem/problem.h"

namespace attncheck::fuzz {

[[noreturn]] void report_finding(const Problem& p, const std::string& law, const Implementation& impl,
                                 const std::string& message, std::vector<LawCall> calls = {});

// A finding about a target's own input handling (e.g. a case file that does
// not round-trip): no Problem, no law; printed, then abort().
[[noreturn]] void report_defect(const std::string& what);

}  // namespace attncheck::fuzz
