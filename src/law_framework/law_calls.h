// The calls a failing law result names (Verdict::calls, law.h): how each came
// from the case, and which one a saved case file holds.
//
// A law that builds its own problem (masked_keys_ignored hides keys,
// the weight laws set V = identity, the comparison laws change one feature)
// fails on a call that is not its case as drawn. The reports print those
// calls with their derivations, and --save-failures saves the call below, so
// replaying the file (or running the implementation on it) shows the failure.
//
// Example usage:
//   Verdict v = law.check(impl, p);
//   complete_calls(p, v.calls);            // "the case itself" / "the case with mask changed (3 of 8 entries)"
//   const LawCall* c = call_to_save(p, v.calls);   // nullptr: save p itself
#pragma once

#include <string>
#include <vector>

#include "law_framework/law.h"

namespace attncheck {

// "mask (3 of 8 entries), v (value_dim 1 -> 4)": the fields in which `derived`
// differs from `base`, in field-list order; empty when they are equal.
std::string changes_from(const Problem& base, const Problem& derived);

// A call equal to `base` gets the derivation "the case itself"; any other
// without one "the case with <changes_from>".
void complete_calls(const Problem& base, std::vector<LawCall>& calls);

// The call a case file saves for a failure seen on `calls`: nullptr (save
// `base`) when there are none, when one of them is `base` itself (a replay of
// the case makes them all again) or when none replays; else the first that
// replays (the law keeps it as it is when it checks it as a case: law.h).
const LawCall* call_to_save(const Problem& base, const std::vector<LawCall>& calls);

// What a case file's history says of a saved derived call: "masked_keys_ignored
// failed on <derivation>, derived from the shrunk case <base header>; compared
// with <role>: <derivation>".
std::string saved_call_history(const Problem& base, const std::vector<LawCall>& calls, const LawCall& saved);

}  // namespace attncheck
