// `attncheck sensitivity`: the founding case drawn (docs/abi/cli-contract.md). For
// each implementation, the query_sensitivity law's measurement and the
// entropy of its attention weights against head_dim 16..1024
// (cli/sensitivity_sweep.h), as an SVG of two panels and optionally a CSV.
// With no --impl/--plugin: reference and seed_unscaled, the picture of the
// founding symptom (the reference stays flat, the unscaled layer collapses).
//
// Example usage (what main.cpp does after parsing the flags):
//   SensitivityArgs a;  a.impls = {"reference", "seed_unscaled"};  a.svg = "docs/sensitivity.svg";
//   int status = run_sensitivity(a, std::cout, std::cerr);  // 0 drawn, 2 could not run as asked
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace attncheck {

struct SensitivityArgs {
  std::vector<std::string> impls;    // --impl NAME...
  std::vector<std::string> plugins;  // --plugin PATH...
  std::vector<std::string> pythons;  // --python MODULE_OR_FILE:FUNCTION... (through the Python bridge)
  std::string svg;                   // --svg FILE (required)
  std::string csv;                   // --csv FILE
  std::string program = "attncheck";
};

// 0: the figure (and CSV) written; 2: it could not run as asked (unknown
// implementation, plugin that does not load, file that cannot be written, no
// point measurable). The exit status does not judge the implementations:
// `check` does that.
int run_sensitivity(const SensitivityArgs& args, std::ostream& out, std::ostream& err);

}  // namespace attncheck
