// A law: a property every correct attention implementation has, judged on one
// Problem. Laws never know which driver (RapidCheck, libFuzzer, a replayed case
// file, the CLI) runs them. Adding a law is adding one file and one line in
// registry.cpp.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "impls/implementation.h"
#include "gen/gen_options.h"
#include "oracle/accuracy_grade.h"
#include "problem/problem.h"

namespace attncheck {

enum class VerdictStatus {
  pass,
  fail,
  not_applicable,  // the law says nothing about this problem (e.g. permutation under a causal rule)
  unsupported,     // the implementation answered ATTNCHECK_UNSUPPORTED to a call the law needed
  fault,           // a call crashed, hung or wrote out of bounds: judged by the process laws
  // The call returned before the part the law judges (a process law's call
  // that returned an error code wrote nothing to inspect): not judged, and
  // not "not applicable" either: the case applied, the implementation gave
  // nothing to judge (run_law counts it towards `insufficient`).
  incomplete,
};

// A call a law made that is not its case as drawn: a problem it built from
// the case (masked_keys_ignored's hidden keys, V = identity for the weight
// laws, the other side of a comparison), with how it was built, in words.
struct LawCall {
  std::string role;        // what the law's message calls it: "before", "with huge hidden keys", "grouped"
  std::string derivation;  // "the case with keys 0, 3 hidden from every row by the mask"; "the case itself"
  Problem problem;
  // The law checked on this call as a case makes the same calls again. False
  // for a call it would not apply to (nan_propagates' call with a NaN
  // planted: a case with NaN is outside its domain): the case is saved instead.
  bool replays = true;
};

struct Verdict {
  VerdictStatus status = VerdictStatus::pass;
  std::string message;  // why it failed, or why the law does not apply
  CallStatus call_status = CallStatus::ok;  // for `fault` and `unsupported`: what the call did
  // For a failure: the calls it was seen on, when they are not the case alone
  // (empty: the case itself is the failing call), the one that failed first,
  // then what it was compared with. A case file saves the case when it is one
  // of them, else the first that replays (LawCall::replays: the law's own
  // construction leaves it as it is), else the case (law_calls.h).
  std::vector<LawCall> calls;
  // A law that compares with the oracle where the typical-error model holds
  // (oracle/typical_error.h): the case's accuracy, which run_law summarises
  // into LawReport::accuracy (the grade beside the verdict). Unset otherwise.
  std::optional<AccuracyCase> accuracy;

  static Verdict pass() { return {}; }
  static Verdict fail(std::string m) { return {VerdictStatus::fail, std::move(m), CallStatus::ok, {}, {}}; }
  static Verdict not_applicable(std::string m) {
    return {VerdictStatus::not_applicable, std::move(m), CallStatus::ok, {}, {}};
  }
  // A failure seen on `calls` (the call to save first): Verdict::fail(m).on(...).
  Verdict on(std::vector<LawCall> seen) && {
    calls = std::move(seen);
    return std::move(*this);
  }
  bool passed() const { return status == VerdictStatus::pass; }
  bool failed() const { return status == VerdictStatus::fail; }
};

struct Law {
  std::string name;
  std::string statement;  // one line, shown by `attncheck list`
  // Narrows the default generator to the problems this law is about
  // (e.g. unit Gaussians for query_sensitivity). Default: leave as is.
  std::function<void(GenOptions&)> tailor;
  std::function<Verdict(Implementation&, const Problem&)> check;
  // The ABI v2 features its check understands (ATTNCHECK_FEATURE_*): problems
  // are drawn within these and the implementation's own. The laws written for
  // v1 understand masks and causal rules; a v2 law widens this.
  FeatureBits features = kV1Features;
  // Features without which the law says nothing (gqa_equals_repeated_kv needs
  // GQA): every drawn problem uses them, and a law whose implementation does
  // not declare them is skipped, never passed.
  FeatureBits required = 0;
  // ABI version 3 promises (ATTNCHECK_PROMISE_*) without which the law says
  // nothing (rerun_bit_identical needs DETERMINISTIC): an
  // implementation that does not make them is skipped with the reason, never
  // passed; one that does is judged on every drawn case.
  uint32_t required_promises = 0;
  // ABI version 3's stored formats (Implementation::kv_formats, bit 1u << f):
  // "" when the formats an implementation offers let the law judge it, else
  // what it needs ("a pair of formats that hold the same values ..."): it is
  // then skipped with that reason before any call, as for a feature it does
  // not declare, rather than after every drawn case turned out not applicable
  // (equal_values_across_formats without a pair of partner formats). Unset: any.
  std::function<std::string(uint32_t kv_formats)> formats_needed;
  // Cheap laws run in the fuzzers on every input; expensive ones do not.
  bool cheap = true;
  // Run when no --law is named. A law that asks more of an implementation than
  // computing attention on finite inputs (NaN propagation) is opt-in: correct
  // code that maps an unusable row to zeros must not fail the default check.
  bool in_default_catalogue = true;
  // A process law judges the implementation as a program: it fails on calls
  // that end with this status (crash, timeout, bad write, unwritten output),
  // whichever law's case provoked them. CallStatus::ok for every other law.
  CallStatus judges_fault = CallStatus::ok;
  // A law whose verdict is a decision over all its graded cases (accuracy_verdict,
  // oracle/accuracy_grade.h), taken by run_law once every case passed; its
  // check grades each case (Verdict::accuracy) and fails none by itself.
  bool decides_on_accuracy = false;

  bool is_process_law() const { return judges_fault != CallStatus::ok; }
};

// Every law, in the order reports list them.
const std::vector<Law>& all_laws();
const Law* find_law(std::string_view name);
// The laws a name that is no longer a law's was renamed to (the spec's names,
// docs/abi/plugin-abi-v3.md "Laws version 3 makes possible"; dead_bytes_inert
// split in two), for command lines written before: empty for any other name.
std::vector<std::string> renamed_law(std::string_view old_name);
// The process law that judges calls ending with `s`; nullptr when none does.
const Law* process_law_for(CallStatus s);
// The law of that name is a process law.
bool is_process_law(std::string_view name);

// Checks one given case (a replayed file, a fuzzer input): no generation, no shrinking.
// A problem that uses a feature the law does not understand is not applicable.
// A failure's calls have their derivations (law_calls.h, complete_calls).
Verdict check_case(const Law& law, Implementation& impl, const Problem& problem);

// Runs the implementation and turns an unusable outcome into the verdict a law
// returns for it: unsupported, fault (crash, hang, bad write: the process laws
// judge those), or fail (an error code). nullopt when the output is usable.
std::optional<Verdict> unusable(const Outcome& o);

}  // namespace attncheck
