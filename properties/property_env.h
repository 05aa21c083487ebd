// What every property test shares: the run options taken from the
// environment (ATTNCHECK_SEED, ATTNCHECK_SIZE=quick|long, ATTNCHECK_CASES),
// and saving a failing case where a developer can adopt it.
#pragma once

#include <cstdint>
#include <string>

#include "driver/law_run.h"

namespace attncheck::testing {

// The seed from ATTNCHECK_SEED (driver/seed_env.h), else `fallback`; a value
// that is not a seed stops the process with exit 2 and the reason.
uint64_t seed_from_env(uint64_t fallback);

// Options for one property run: seed from ATTNCHECK_SEED (default 1; anything
// but a whole number stops the run with the reason), the size profile from
// ATTNCHECK_SIZE (quick | long), the case count from ATTNCHECK_CASES, and the
// CLI's judged floor (--min-judged, at most the case count): run_law reports a
// law that judged fewer cases insufficient. The seed is printed once per process.
RunOptions property_options();

// Writes the report's counterexample to $ATTNCHECK_REGRESSION_DIR (default
// build/regressions) and returns a line telling how to adopt it into
// regression/cases/, or "" when there is nothing to save.
std::string save_counterexample(const LawReport& report, const Implementation& impl, const RunOptions& options);

}  // namespace attncheck::testing
