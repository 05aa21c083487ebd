// attncheck's public C++ API: check an attention function of your own, in your
// own process, with the laws the CLI runs (the same generators, oracle,
// shrinking, diagnosis and case files). Link attncheck::attncheck
// (find_package(attncheck)); for one GoogleTest test per law see
// attncheck/gtest.hpp.
//
// The callable has the plugin ABI's meaning (docs/abi/plugin-abi.md,
// plugin-abi-v2.md and plugin-abi-v3.md; the structs are those of
// attncheck/plugin.h, plugin_v2.h and plugin_v3.h): given the call, write out
// and return ATTNCHECK_OK, or
// ATTNCHECK_UNSUPPORTED for what it does not offer, or another code for an
// error. Any callable is taken -- a function, a lambda, a functor with state,
// a std::function -- with one of these signatures:
//   int(const attncheck_call*, char* err, size_t err_size)     ABI v1
//   int(const attncheck_call*)                                  ABI v1, no message
//   int(const attncheck_call_v2*, char* err, size_t err_size)  ABI v2 (declare its features in Options)
//   int(const attncheck_call_v2*)                               ABI v2, no message
//   int(const attncheck_call_v3*, char* err, size_t err_size)  ABI v3 (features and promises in Options)
//   int(const attncheck_call_v3*)                               ABI v3, no message
// A v2 or v3 backward is given with attncheck::with_backward (below).
// A v3 callable gets every call as an attncheck_call_v3: its v2 part, then
// the fields version 3 adds, neutral unless it declares the feature that uses
// them (ATTNCHECK_FEATURE_PACKED: cu_seqlens_q/k, total_q/k; q and out packed
// [total_q][heads][dim], k and v [total_k][kv_heads][dim], stride[0] 0).
//
// It runs in-process, as the built-ins do: a crash or a hang of the callable
// is the test binary's (the CLI's --plugin isolates a plugin in a child
// process instead). Calls come from one thread at a time.
//
// Example usage:
//   auto mine = [](const attncheck_call* c, char* err, size_t n) { ...; return ATTNCHECK_OK; };
//   attncheck::Options o;  o.name = "mine";  o.laws = {"matches_oracle", "query_sensitivity"};
//   attncheck::Report r = attncheck::check(mine, o);
//   if (!r.passed()) std::cerr << r.text();  // per law: status, judged cases, shrunk case, diagnosis
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "attncheck/plugin.h"
#include "attncheck/plugin_v2.h"
#include "attncheck/plugin_v3.h"

namespace attncheck {

// What to run. Every field has the CLI's default (`attncheck check`).
struct Options {
  std::string name = "callable";  // in reports and case files (source "cpp:<name>")
  // The run's seed; nullopt: $ATTNCHECK_SEED when set, else 1 (a test that
  // draws a fresh seed per run would fail at random; the seed is in the report).
  std::optional<uint64_t> seed;
  int cases = 100;                // generated cases per law
  std::vector<std::string> laws;  // empty: the default catalogue (every law of `attncheck list` but opt-in ones)
  std::string dtypes = "all";     // "all", one of f32 f64 f16 bf16, or a comma list; the unsupported are dropped
  std::string profile = "default";  // shape profile (attncheck list / --profile)
  // ABI v2 and v3 callables: the ATTNCHECK_FEATURE_* bits it declares (0:
  // masks and causal rules, as a v1 call offers). A v3 callable may add
  // version 3's bits that some law judges (ATTNCHECK_FEATURE_PACKED, forward
  // calls); one no law judges yet is a UsageError, never a silent pass.
  uint32_t features = 0;
  // ABI v3 callables only: the ATTNCHECK_PROMISE_* bits it makes
  // (DETERMINISTIC, DETERMINISTIC_BACKWARD, BATCH_INVARIANT), which the
  // promise laws (rerun_bit_identical, backward_rerun_bit_identical, batch_invariance) then demand bit for bit (docs/abi/plugin-abi-v3.md).
  uint32_t promises = 0;
  // ABI v3 callables with ATTNCHECK_FEATURE_KV_FORMATS: the stored formats of K
  // and V it takes, bit (1u << f) per attncheck_kv_format f (the v3 plugin's
  // kv_formats); the checker sends each for K and for V, mixed, and fails one
  // refused on every call that uses it (docs/abi/plugin-abi-v3.md).
  uint32_t kv_formats = 0;
  int min_judged = 20;            // fewer judged cases: insufficient, which fails (as --min-judged)
  bool allow_insufficient = false;
  double shrink_seconds = 10;     // shrinking a failure stops after this long
  std::string save_failures_dir;  // each failing law's shrunk case is saved here; empty: not saved
};

enum class Status { pass, fail, skipped, insufficient };
std::string_view status_name(Status s);  // "pass", "fail", "skipped", "insufficient"

// One law's verdict.
struct LawOutcome {
  std::string law;
  Status status = Status::pass;
  int cases = 0;             // drawn
  int judged = 0;            // judged (passed, or up to and including the failure)
  std::string message;       // the failure of the shrunk case, or why the law was skipped
  std::string diagnosis;     // "behaves like: ..." when a fault model matches; else empty
  std::string failing_case;  // the shrunk case, described (shape, flags, elements); empty when none
  // The calls the law built from the shrunk case and failed on, when it is not
  // the case alone (hidden keys, V = identity, the other side of a comparison):
  // "failing call (ROLE): DERIVATION" and the call described, then "compared
  // with (ROLE): ..."; empty when the case itself is the failing call.
  std::string failing_calls;
  int shrink_steps = 0;
  std::string case_file;     // where the shrunk case was saved (Options::save_failures_dir); else empty
  std::string found_while;   // process laws: the law whose case provoked the crash or bad write
  double seconds = 0;
};

struct Report {
  std::string implementation;  // Options::name
  uint64_t seed = 0;           // pass it back (Options::seed, ATTNCHECK_SEED) to repeat the run
  std::vector<LawOutcome> laws;   // catalogue order; a process law may be added when a call crashed
  std::vector<std::string> notes;  // e.g. dtypes dropped because every probe answered UNSUPPORTED
  bool allow_insufficient = false;

  // No law failed, and none was insufficient unless that was allowed.
  bool passed() const;
  const LawOutcome* law(std::string_view name) const;  // nullptr when that law was not run
  // The console's account (as `attncheck check` prints it): one line per law,
  // then each failure's message, diagnosis and shrunk case, then the verdict.
  const std::string& text() const { return console; }

  std::string console;  // filled by check()
};

// Usage errors (an unknown law or dtype, a bad profile, a callable that
// supports none of the requested dtypes) throw this; a law's failure never does.
struct UsageError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// A callable, type-erased: exactly one of forward / forward_v2 / forward_v3
// is set, and at most the backward of its version.
struct Callable {
  std::function<int(const attncheck_call*, char*, size_t)> forward;
  std::function<int(const attncheck_call_v2*, char*, size_t)> forward_v2;
  std::function<int(const attncheck_call_v2*, const attncheck_grad*, char*, size_t)> backward_v2;  // optional
  std::function<int(const attncheck_call_v3*, char*, size_t)> forward_v3;
  std::function<int(const attncheck_call_v3*, const attncheck_grad*, char*, size_t)> backward_v3;  // optional
};

namespace detail {
template <class F, class Call>
inline constexpr bool takes_err = std::is_invocable_r_v<int, F&, const Call*, char*, size_t>;
template <class F, class Call>
inline constexpr bool takes_call = std::is_invocable_r_v<int, F&, const Call*>;
template <class F, class Call>
inline constexpr bool speaks = takes_err<F, Call> || takes_call<F, Call>;

// The callable as an (err, size) entry; it is copied (a functor's state with it).
template <class Call, class F>
std::function<int(const Call*, char*, size_t)> entry(F&& f) {
  using D = std::decay_t<F>;
  if constexpr (takes_err<D, Call>) {
    return std::function<int(const Call*, char*, size_t)>(std::forward<F>(f));
  } else {
    return [g = D(std::forward<F>(f))](const Call* c, char*, size_t) mutable { return static_cast<int>(g(c)); };
  }
}
}  // namespace detail

// Any callable with one of the signatures above; a Callable passes through.
template <class F>
Callable make_callable(F&& f) {
  using D = std::decay_t<F>;
  if constexpr (std::is_same_v<D, Callable>) {
    return std::forward<F>(f);
  } else {
    constexpr bool v1 = detail::speaks<D, attncheck_call>, v2 = detail::speaks<D, attncheck_call_v2>,
                   v3 = detail::speaks<D, attncheck_call_v3>;
    static_assert(v1 || v2 || v3,
                  "attncheck: the callable must take (const attncheck_call*[, char* err, size_t err_size]), "
                  "(const attncheck_call_v2*[, char*, size_t]) or (const attncheck_call_v3*[, char*, size_t]) "
                  "and return int");
    static_assert(int{v1} + int{v2} + int{v3} == 1,
                  "attncheck: the callable takes calls of more than one ABI version; wrap it in a lambda of one");
    Callable c;
    if constexpr (v1) c.forward = detail::entry<attncheck_call>(std::forward<F>(f));
    else if constexpr (v2) c.forward_v2 = detail::entry<attncheck_call_v2>(std::forward<F>(f));
    else c.forward_v3 = detail::entry<attncheck_call_v3>(std::forward<F>(f));
    return c;
  }
}

// A v2 or v3 forward with its backward (gradient laws then judge it), the
// backward taking the forward's call:
//   int backward(const attncheck_call_v2*, const attncheck_grad*, char* err, size_t err_size)
//   int backward(const attncheck_call_v3*, const attncheck_grad*, char* err, size_t err_size)
template <class F, class B>
Callable with_backward(F&& forward, B&& backward) {
  using D = std::decay_t<F>;
  constexpr bool v2 = detail::speaks<D, attncheck_call_v2>, v3 = detail::speaks<D, attncheck_call_v3>;
  static_assert(v2 != v3, "attncheck: with_backward needs a v2 or a v3 forward");
  Callable c;
  if constexpr (v2) {
    c.forward_v2 = detail::entry<attncheck_call_v2>(std::forward<F>(forward));
    c.backward_v2 = std::forward<B>(backward);
  } else {
    c.forward_v3 = detail::entry<attncheck_call_v3>(std::forward<F>(forward));
    c.backward_v3 = std::forward<B>(backward);
  }
  return c;
}

// Runs the chosen laws on the callable (after the CLI's dtype and shape
// probes) and returns the report. Throws UsageError as said above.
Report check(const Callable& callable, const Options& options = {});

template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Callable>>>
Report check(F&& callable, const Options& options = {}) {
  return check(make_callable(std::forward<F>(callable)), options);
}

// The laws `options.laws` selects, in catalogue order (every default law when
// empty); throws UsageError naming an unknown law.
std::vector<std::string> selected_laws(const Options& options);

}  // namespace attncheck
