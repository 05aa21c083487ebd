// Failures that likely share one cause. One fault (an unscaled logit, a
// stride mix-up, sums kept in f16) breaks 6 to 8 laws at once, and some of
// those laws compare two of the implementation's own wrong results. The
// reports group an implementation's failing laws that share a diagnosis (the
// same fault model, or the same measured description) or a shrunk case (the
// same Problem), transitively, and list each group's most direct law first:
//
//   oracle       the output beside the high-precision oracle's
//                (matches_oracle, lse_matches_oracle, grad_matches_oracle):
//                it shows the fault itself, element by element;
//   exact value  one call against a value the law knows without the oracle
//                (weights sum to 1, a single key's value, zeros): a symptom,
//                measured against the truth;
//   two calls    two calls of the implementation compared (permutations,
//                linearity, layouts, determinism): both sides may be wrong,
//                so it says least about what is wrong;
//   process      the call as a program (crash, timeout, bad write).
//
// Within a kind, the catalogue's order. Only failures nobody declared
// (LawResult::failed() and not expected_fail()) are grouped.
//
// Example usage:
//   for (const FailureGroup& g : failure_groups(impl))
//     if (g.laws.size() > 1) out << failure_group_header(impl, g) << "\n";
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "report/run_report.h"

namespace attncheck {

enum class Directness { oracle = 0, exact_value = 1, two_calls = 2, process = 3 };

// The kind of a law by its name (every law of the catalogue is listed;
// a name it does not know counts as two_calls).
Directness law_directness(std::string_view law);
// "oracle", "exact_value", "two_calls", "process": the JSON's words.
std::string_view directness_name(Directness d);

struct FailureGroup {
  std::vector<std::size_t> laws;  // indices into ImplementationResult::laws, most direct first
  bool same_diagnosis = false;    // two of its laws share a diagnosis
  bool same_case = false;         // two of its laws share a shrunk case
  std::string diagnosis;          // the diagnosis its laws share (the most direct one's), when same_diagnosis
};

// The groups of `impl`'s unexpected failures, singletons included, in the
// order of each group's first law in the catalogue.
std::vector<FailureGroup> failure_groups(const ImplementationResult& impl);

// What a diagnosis says of the fault, for comparing: "behaves like: <model>"
// without where it was seen (" (seen with a mask)"), or a measured text whole.
std::string diagnosis_key(const std::string& diagnosis);

// The console's header line of a group of two or more: "likely one cause
// (same diagnosis, same shrunk case): 7 failing laws of NAME, most direct
// first: matches_oracle, ...". Unwrapped; the name made printable.
std::string failure_group_header(const ImplementationResult& impl, const FailureGroup& g);

// For one failing law (index into impl.laws) in a group of two or more, the
// line JUnit adds to its failure: "likely one cause with: a, b (same
// diagnosis); most direct first: matches_oracle, a, b". "" otherwise.
std::string failure_group_note(const ImplementationResult& impl, std::size_t law);

// The Markdown summary's "Likely one cause" section: per implementation
// whose failures the summary lists, each group of two or more; "" when none.
std::string failure_groups_markdown(const RunReport& report);

}  // namespace attncheck
