// Declared outcomes of a check: laws left out (--skip-law NAME) and known,
// accepted failures (--expect-fail [IMPL/]LAW[:REASON]), from the command line
// and from a config file (--config FILE, conventionally attncheck.json).
//
// An expected failure is reported as `expected_fail` (neither a pass nor a
// failure: the verdict and the exit status do not count it); an expected
// failure that passes is `unexpected_pass` and fails the run, so a fixed bug
// is noticed and its expectation removed.
//
// --expect-fail LAW[:REASON] applies to every implementation of the run;
// IMPL/LAW[:REASON] only to the implementation named IMPL (its name in the
// report: a built-in's name, a plugin's label from --plugin NAME=PATH, or the
// name the plugin gives itself). REASON is free text, e.g. an upstream issue.
//
// The config file (every key optional, no others):
//   {
//     "skip_law": ["nan_propagates"],
//     "expect_fail": [
//       {"law": "fully_masked_rows_zero", "implementation": "torch_sdpa",
//        "reason": "libtorch 1.13: NaN for rows that see no key (pytorch/pytorch#41508)"},
//       {"law": "matches_oracle", "reason": "a kernel the library picks by CPU", "strict": false}
//     ]
//   }
// ("implementation" absent: every implementation.) "strict": false declares a
// failure that shows on some machines only (a library that picks its kernel
// by CPU or by layout): it is `expected_fail` where it fails and a plain pass,
// with a note, where it passes, never an `unexpected_pass`.
//
// Example usage:
//   Expectations e;
//   std::string error;
//   if (!add_expect_fail("torch/fully_masked_rows_zero:upstream NaN", e, error)) ...;
//   std::optional<std::string> why = e.expected_failure("torch", "fully_masked_rows_zero");  // "upstream NaN"
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace attncheck {

struct ExpectedFailure {
  std::string implementation;  // empty: every implementation
  std::string law;
  std::string reason;
  bool strict = true;  // false: passing is not an unexpected pass (the failure shows on some machines only)
  std::string origin;  // "--expect-fail ..." or "attncheck.json: expect_fail[2]", for messages
};

struct Expectations {
  std::vector<std::string> skip_laws;
  std::vector<ExpectedFailure> expect_fail;

  // The reason when `law` is expected to fail on `implementation` (the first declaration that names it).
  std::optional<std::string> expected_failure(const std::string& implementation, const std::string& law) const;
  // That first declaration itself; nullptr when none names it.
  const ExpectedFailure* find(const std::string& implementation, const std::string& law) const;
  bool skipped(const std::string& law) const;
};

// Parses one --expect-fail value into `into`; false with `error` (no "attncheck check: " prefix) when malformed.
bool add_expect_fail(const std::string& text, Expectations& into, std::string& error);

// Reads a config file into `into`; false with `error` naming the file and the field.
bool load_expectations_config(const std::string& path, Expectations& into, std::string& error);

// Every law named must exist, every implementation named must be one of the
// run's (`implementations` empty: not checked, for a check before the
// plugins are loaded); "" when fine, else the message.
std::string expectations_problem(const Expectations& e, const std::vector<std::string>& implementations);

}  // namespace attncheck
