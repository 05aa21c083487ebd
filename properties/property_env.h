// What every property test shares: the run options taken from the
// environment (ATTNCHECK_SEED, ATTNCHECK_SIZE=quick|long, ATTNCHECK_CASES),
// and saving a failing case where a developer can adopt it.
#pragma once

#include <string>

#include "laws/runner.h"

namespace attncheck::testing {

// Options for one property run; the seed is printed once per process.
RunOptions property_options();

// Writes the report's counterexample to $ATTNCHECK_REGRESSION_DIR (default
// build/regressions) and returns a line telling how to adopt it into
// regression/cases/, or "" when there is nothing to save.
std::string save_counterexample(const LawReport& report, const Implementation& impl, const RunOptions& options);

}  // namespace attncheck::testing
