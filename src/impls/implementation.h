// An implementation under test: anything that answers one forward call.
// Built-ins run in-process through their ABI function; plugins run in an
// isolated child process. Laws only see this interface.
#pragma once

#include <string>
#include <vector>

#include "problem/outcome.h"
#include "problem/problem.h"

namespace attncheck {

class Implementation {
 public:
  virtual ~Implementation() = default;
  virtual std::string name() const = 0;
  // "builtin:<name>" or "plugin:<path>", as in the JSON report.
  virtual std::string source() const = 0;
  virtual Outcome run(const Problem& problem) = 0;
  // The ABI v2 features it declares (ATTNCHECK_FEATURE_*): laws and
  // generators send only problems whose Problem::features() lie within them.
  // A v1 implementation takes masks and causal rules.
  virtual FeatureBits features() const { return kV1Features; }
  // What it declares that this version of attncheck does not judge yet (a
  // version-3 plugin's features, K/V formats, numerics and promises beyond
  // version 2: "feature paged", "promise deterministic"): no law draws a case
  // that uses them, so its verdict covers none of them, and the reports say so.
  virtual std::vector<std::string> declared_not_judged() const { return {}; }
};

// What an implementation answers, without being called, for a problem that
// uses a feature it does not declare: never sent, so "unsupported" (a law that
// only drew such problems judged nothing, and cannot pass). "" message: declared.
inline std::string undeclared_features(const Problem& problem, FeatureBits declared) {
  const FeatureBits missing = problem.features() & ~declared;
  if (!missing) return "";
  return "not called: the problem uses " + feature_list(missing) + ", which the implementation does not declare";
}

// The spec hands a backward call the implementation's own lse whenever it
// declares LSE (NULL otherwise), as FlashAttention's backward takes it: a
// backward problem that does not ask for the lse is run asking for it, for
// such an implementation, and the lse is dropped from the outcome.
inline bool backward_needs_lse(const Problem& problem, FeatureBits declared) {
  return problem.is_backward() && !problem.lse_requested && (declared & ATTNCHECK_FEATURE_LSE);
}

}  // namespace attncheck
