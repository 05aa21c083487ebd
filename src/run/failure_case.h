// The case file of a law's failure: the call that failed, not always the case
// the law drew. A law that builds its own problem (masked_keys_ignored hides
// keys, the weight laws set V = identity) failed on that problem: it is saved,
// with how it was built in history.derivation, so that replaying the file or
// running the implementation on it shows the failure (docs/case-files.md).
//
// Example usage:
//   CaseRecord c = law_failure_record(l.run, "causal_off_by_one", "builtin:causal_off_by_one", "rapidcheck", 1);
//   save_case(c, "build/regressions");
#pragma once

#include <cstdint>
#include <string>

#include "casefile/case_file.h"
#include "driver/law_run.h"

namespace attncheck {

// r failed with a counterexample. The record of law_calls.h's call_to_save of
// its failing calls (with its derivation), else of the shrunk case itself.
CaseRecord law_failure_record(const LawReport& r, std::string implementation, std::string source,
                              std::string found_by, uint64_t seed);

}  // namespace attncheck
