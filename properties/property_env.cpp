#include "property_env.h"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <mutex>

#include "casefile/case_file.h"

namespace attncheck::testing {

RunOptions property_options() {
  RunOptions o = options_from_env();
  static std::once_flag printed;
  std::call_once(printed, [&] {
    std::cout << "attncheck properties: ATTNCHECK_SEED=" << o.seed << " cases=" << o.cases
              << " (rerun with the same ATTNCHECK_SEED to reproduce; ATTNCHECK_SIZE=long for long runs)\n";
  });
  return o;
}

std::string save_counterexample(const LawReport& report, const Implementation& impl, const RunOptions& options) {
  if (!report.counterexample) return "";
  const char* env = std::getenv("ATTNCHECK_REGRESSION_DIR");
  const std::string dir = env && *env ? env : ATTNCHECK_DEFAULT_REGRESSION_DIR;
  CaseRecord c;
  c.problem = *report.counterexample;
  c.law = report.law;
  c.implementation = impl.name();
  c.source = impl.source();
  c.found_by = "rapidcheck";
  c.seed = options.seed;
  c.message = report.message;
  c.diagnosis = report.diagnosis;
  // c.date left empty: save_case stamps the current UTC time.
  try {
    const std::string path = save_case(c, dir);
    return "\nsaved the failing case to " + path + "\nadopt it as a regression case with:  cp '" + path + "' " +
           ATTNCHECK_SOURCE_DIR "/regression/cases/\n";
  } catch (const std::exception& e) {
    return std::string("\ncould not save the failing case: ") + e.what() + "\n";
  }
}

}  // namespace attncheck::testing
