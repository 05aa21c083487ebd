#include "diagnosis/measurements.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "diagnosis/measurement_steps.h"

namespace attncheck {

std::optional<ProbeRun> ProbeBudget::run(Implementation& impl, const Problem& p) {
  if (broke_ || left_ <= 0) return std::nullopt;
  --left_;
  ++used_;
  ProbeSkip why = ProbeSkip::none;
  std::optional<ProbeRun> r = run_probe(impl, p, &why);
  if (why == ProbeSkip::broke) broke_ = true;
  return r;
}

std::string significant(double x, int digits) {
  char buf[64];
  if (std::isfinite(x) && std::abs(x) >= std::pow(10.0, digits) && std::abs(x) < 1e15) {
    // %g would write 710 as 7.1e+02: round to the digits, print it whole.
    const double unit = std::pow(10.0, std::floor(std::log10(std::abs(x))) - digits + 1);
    std::snprintf(buf, sizeof buf, "%.0f", std::round(x / unit) * unit);
  } else {
    std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  }
  return buf;
}

std::string measure(Implementation& impl, const Problem& failing) {
  ProbeBudget budget(kMaxMeasureCalls);
  bool weights_found = false;
  std::vector<std::string> found = measure_weights(impl, failing, budget, weights_found);
  const auto add = [&found](std::vector<std::string> more) {
    for (std::string& f : more) found.push_back(std::move(f));
  };
  add(measure_precision(impl, failing, budget, weights_found));
  add(measure_threshold(impl, failing, budget));
  add(measure_axes(impl, failing, budget));
  if (found.empty()) return "";
  std::string r = "measured: ";
  for (std::size_t k = 0; k < found.size(); ++k) r += (k ? "; " : "") + found[k];
  return r;
}

}  // namespace attncheck
