#include "property_env.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <mutex>
#include <string>

#include "casefile/case_file.h"
#include "driver/law_run.h"  // kDefaultMinJudged: the CLI's --min-judged
#include "run/failure_case.h"
#include "driver/seed_env.h"

namespace attncheck::testing {

uint64_t seed_from_env(uint64_t fallback) {
  try {
    return seed_from_env_or(fallback);
  } catch (const SeedEnvError& e) {
    // Read before any test runs (RapidCheck's seed below): say why and stop,
    // rather than run a seed nobody asked for.
    std::cerr << "attncheck properties: " << e.what() << "\n";
    std::exit(2);
  }
}

RunOptions property_options() {
  RunOptions o;
  o.seed = seed_from_env(1);
  const char* size = std::getenv("ATTNCHECK_SIZE");
  if (size && std::string(size) == "long") {
    o.cases = 1000;
    o.gen.size_factor = 1.8;  // lengths up to 129 and beyond the largest tiles
    o.shrink_seconds = 60;
  } else {
    o.cases = 100;
  }
  if (const char* c = std::getenv("ATTNCHECK_CASES"); c && *c) o.cases = std::atoi(c);
  // The floor `attncheck check` demands before a law passes (--min-judged,
  // at most the case count): a law that judged fewer is insufficient here as
  // there, never a pass on the few it judged.
  o.min_judged = std::min(kDefaultMinJudged, o.cases);
  static std::once_flag printed;
  std::call_once(printed, [&] {
    std::cout << "attncheck properties: ATTNCHECK_SEED=" << o.seed << " cases=" << o.cases
              << " (rerun with the same ATTNCHECK_SEED to reproduce; ATTNCHECK_SIZE=long for long runs)\n";
  });
  return o;
}

namespace {
// RC_GTEST_PROP properties read RapidCheck's global configuration, which draws
// a fresh random seed on every run unless RC_PARAMS names one. Pin it to
// ATTNCHECK_SEED before any test runs, so a CI failure replays from the seed
// the run printed. An RC_PARAMS set by hand wins.
const bool kRapidCheckSeeded = [] {
  if (std::getenv("RC_PARAMS")) return false;
  const std::string params = "seed=" + std::to_string(seed_from_env(1));
  return setenv("RC_PARAMS", params.c_str(), 0) == 0;
}();
}  // namespace

std::string save_counterexample(const LawReport& report, const Implementation& impl, const RunOptions& options) {
  if (!report.counterexample) return "";
  const char* env = std::getenv("ATTNCHECK_REGRESSION_DIR");
  const std::string dir = env && *env ? env : ATTNCHECK_DEFAULT_REGRESSION_DIR;
  // The call that failed (a law's derived call, with its derivation), as check --save-failures saves it.
  const CaseRecord c = law_failure_record(report, impl.name(), impl.source(), "rapidcheck", options.seed);
  try {
    const std::string path = save_case(c, dir);
    return "\nsaved the failing case to " + path + "\nadopt it as a regression case with:  cp '" + path + "' " +
           ATTNCHECK_SOURCE_DIR "/regression/cases/\n";
  } catch (const std::exception& e) {
    return std::string("\ncould not save the failing case: ") + e.what() + "\n";
  }
}

}  // namespace attncheck::testing
