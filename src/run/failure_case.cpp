#include "run/failure_case.h"

#include "law_framework/law_calls.h"

namespace attncheck {

CaseRecord law_failure_record(const LawReport& r, std::string implementation, std::string source,
                              std::string found_by, uint64_t seed) {
  const Problem& base = *r.counterexample;
  const LawCall* saved = call_to_save(base, r.failing_calls);
  CaseRecord c = failure_record(saved ? saved->problem : base, r.law, std::move(implementation), std::move(source),
                                std::move(found_by), seed, r.message, r.diagnosis);
  if (saved) c.derivation = saved_call_history(base, r.failing_calls, *saved);
  return c;
}

}  // namespace attncheck
