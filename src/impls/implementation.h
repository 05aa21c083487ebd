// An implementation under test: anything that answers one forward call.
// Built-ins run in-process through their ABI function; plugins run in an
// isolated child process. Laws only see this interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attncheck/plugin_v3.h"
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
  // The ABI version 3 promises it makes (ATTNCHECK_PROMISE_*): what the
  // promise laws then demand bit for bit (docs/abi/plugin-abi-v3.md,
  // "Promises"). A version-3 plugin's attncheck_impl_v3::promises; a built-in's
  // row (impls/builtins.h).
  virtual uint32_t promises() const { return 0; }
  // The stored K and V formats it offers with ATTNCHECK_FEATURE_KV_FORMATS: bit
  // (1u << f) per attncheck_kv_format f (DTYPE, bit 0, implied), as a version-3
  // plugin's attncheck_impl_v3::kv_formats. Problems store K and V only in these.
  virtual uint32_t kv_formats() const { return 0; }
  // The ABI version 3 numerics it declares (ATTNCHECK_NUMERICS_*): departures
  // from exact arithmetic the oracle's bound then admits in the calls each
  // applies to (docs/abi/plugin-abi-v3.md, "Declared numerics"; Problem::numerics
  // holds the bits that apply to a call). A version-3 plugin's attncheck_impl_v3::numerics.
  virtual uint32_t numerics() const { return 0; }
  // Places the buffers of the calls that follow `bytes` (a multiple of
  // CallLayout::kAlign, 64) further into the call's region: every tensor at
  // another address, the same layout and the same bytes. 0 puts them back.
  // The determinism promises are about calls that differ in their buffers'
  // addresses; false when this implementation cannot move them.
  virtual bool shift_buffers(std::size_t bytes) {
    (void)bytes;
    return false;
  }
};

// ABI version 3 promise bits in words, as the reports name them:
// "the promise deterministic,batch_invariant" (v3_declaration's names).
inline std::string promise_list(uint32_t bits) {
  static constexpr std::pair<uint32_t, const char*> kNames[] = {
      {ATTNCHECK_PROMISE_DETERMINISTIC, "deterministic"},
      {ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD, "deterministic_backward"},
      {ATTNCHECK_PROMISE_BATCH_INVARIANT, "batch_invariant"}};
  std::string s;
  for (const auto& [bit, name] : kNames)
    if (bits & bit) s += (s.empty() ? "" : ",") + std::string(name);
  return "the promise " + (s.empty() ? std::string("none") : s);
}

// What an implementation answers, without being called, for a problem that
// uses a feature it does not declare: never sent, so "unsupported" (a law that
// only drew such problems judged nothing, and cannot pass). "" message: declared.
// A K or V format outside `kv_formats` (Implementation::kv_formats) is answered likewise.
inline std::string undeclared_features(const Problem& problem, FeatureBits declared, uint32_t kv_formats = 0) {
  const FeatureBits missing = problem.features() & ~declared;
  if (missing)
    return "not called: the problem uses " + feature_list(missing) + ", which the implementation does not declare";
  for (const KvFormat f : {problem.k_format, problem.v_format})
    if (f != KvFormat::dtype && !(kv_formats & (1u << static_cast<int>(f))))
      return "not called: the problem stores K or V as " + std::string(kv_format_name(f)) +
             ", which the implementation does not offer in kv_formats";
  return "";
}

// The spec hands a backward call the implementation's own lse whenever it
// declares LSE (NULL otherwise), as FlashAttention's backward takes it: a
// backward problem that does not ask for the lse is run asking for it, for
// such an implementation, and the lse is dropped from the outcome.
inline bool backward_needs_lse(const Problem& problem, FeatureBits declared) {
  return problem.is_backward() && !problem.lse_requested && (declared & ATTNCHECK_FEATURE_LSE);
}

}  // namespace attncheck
