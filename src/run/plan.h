// The choices of a run that `attncheck check` (cli/check_command.cpp) and
// attncheck::check (api/check_api.cpp) make the same way, each with its own
// words for what is wrong: the dtypes asked for, the laws, and what each
// target takes, probed before any law runs so that the generator draws only
// calls it can answer.
//
// Example usage:
//   const DTypeChoice d = parse_dtypes("f32,bf16");
//   if (!d.ok()) ...;                                   // d.unknown: the word that is no dtype
//   if (std::string bad = unknown_law_problem(names); !bad.empty()) ...;
//   std::vector<const Law*> laws = select_laws(names);  // catalogue order
//   if (!probe_target(target, d.dtypes)) ...;           // it takes none of them
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "law_framework/law.h"
#include "run/target.h"

namespace attncheck {

// "all", one dtype's name, or a comma list of them.
struct DTypeChoice {
  std::vector<DType> dtypes;           // in the order given, each once
  std::optional<std::string> unknown;  // the first word that names no dtype
  // Neither an unknown word nor an empty list.
  bool ok() const { return !unknown && !dtypes.empty(); }
};
DTypeChoice parse_dtypes(const std::string& text);

// "" when every name is a law's, else "unknown law 'X'; the laws are: a, b, ...".
std::string unknown_law_problem(const std::vector<std::string>& names);

// The laws `names` picks, in catalogue order; none named: the default
// catalogue (every law but the opt-in ones). Ask unknown_law_problem first:
// a name no law has picks nothing.
std::vector<const Law*> select_laws(const std::vector<std::string>& names);

// Asks `target.loaded` which of the `requested` dtypes it offers and, when it
// offers one, which shapes it accepts; sets target.probes. False when it
// offers none of them: nothing can be checked.
bool probe_target(Target& target, const std::vector<DType>& requested);

}  // namespace attncheck
