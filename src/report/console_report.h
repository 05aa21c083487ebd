// The console rendering of a RunReport, readable in 100 columns:
//
//   implementations: [1] reference (builtin:reference, must pass) ...   (legend, when names do not fit)
//   law                              [1]  [2]  [3]
//   weights_sum_to_one               PASS PASS FAIL
//   ...
//   verdict                          pass pass fail
//
// laws are rows and implementations columns (the catalogue's dozens of laws would never fit across).
// Then every failure in full (law, implementation, message, diagnosis, the
// shrunk case, the command that reproduces it), then one verdict line.
#pragma once

#include <ostream>

#include "report/run_report.h"

namespace attncheck {

// How the console may look: colour only where the CLI decided the terminal
// takes it (a TTY, no NO_COLOR, not --color never; or --color always).
struct ConsoleStyle {
  bool colour = false;
};

void print_law_table(const RunReport& report, std::ostream& out, const ConsoleStyle& style = {});

// Every failure; in the default run a zoo member shows only its most telling
// failure (and names the other laws that caught it).
// Expected failures (XFAIL) are listed short, an expected failure that passed (XPASS) too.
void print_failures(const RunReport& report, std::ostream& out, const ConsoleStyle& style = {});

// The last line: "verdict: pass ..." / "verdict: FAIL ..." or, in the default
// run, whether every expectation held.
void print_verdict(const RunReport& report, std::ostream& out, const ConsoleStyle& style = {});

}  // namespace attncheck
