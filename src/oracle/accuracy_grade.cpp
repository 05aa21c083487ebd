#include "oracle/accuracy_grade.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attncheck {
namespace {

// The value at rank ceil(p * n) of the sorted values (n >= 1).
double quantile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const auto n = static_cast<double>(v.size());
  const auto rank = static_cast<std::size_t>(std::max(1.0, std::ceil(p * n)));
  return v[std::min(rank, v.size()) - 1];
}

// Three significant digits: "1.23", "0.0213", "1.2e+03".
std::string short_number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

}  // namespace

std::vector<AccuracyGrade> summarise_accuracy(const std::vector<AccuracyCase>& cases) {
  std::vector<AccuracyGrade> out;
  for (DType t : every_dtype()) {
    std::vector<double> typical, ulps, bound, stored16;
    AccuracyGrade g;
    g.dtype = t;
    for (const AccuracyCase& c : cases)
      if (c.dtype == t) {
        typical.push_back(c.typical_rms);
        ulps.push_back(c.worst_ulps);
        bound.push_back(c.worst_of_bound);
        stored16.push_back(c.stored16_rms);
        g.elements += c.elements;
      }
    if (typical.empty()) continue;
    g.cases = static_cast<int32_t>(typical.size());
    g.typical_median = quantile(typical, 0.5);
    g.typical_p99 = quantile(typical, 0.99);
    g.ulps_median = quantile(ulps, 0.5);
    g.ulps_p99 = quantile(ulps, 0.99);
    g.bound_median = quantile(bound, 0.5);
    g.bound_p99 = quantile(bound, 0.99);
    g.stored16_median = quantile(stored16, 0.5);
    g.stored16_p99 = quantile(stored16, 0.99);
    out.push_back(g);
  }
  return out;
}

std::string accuracy_verdict(const std::vector<AccuracyCase>& cases) {
  std::string out;
  for (const AccuracyGrade& g : summarise_accuracy(cases)) {
    int beyond = 0;
    for (const AccuracyCase& c : cases) beyond += c.dtype == g.dtype && !(c.stored16_rms <= kAccuracyFactor);
    if (g.cases < kAccuracyMinCases || 2 * beyond < g.cases) continue;
    out += std::string(out.empty() ? "" : "; ") + std::string(dtype_name(g.dtype)) + ": " + std::to_string(beyond) +
           " of " + std::to_string(g.cases) + " graded cases are beyond " + short_number(kAccuracyFactor) +
           "x the typical error of a careful " + std::string(dtype_name(g.dtype)) + " kernel" +
           (info(g.dtype).is_16bit() ? " storing its logits and weights in " + std::string(dtype_name(g.dtype)) : "") +
           " (" + accuracy_text(g) + ")";
  }
  return out;
}

std::string accuracy_text(const AccuracyGrade& g) {
  const std::string dt(dtype_name(g.dtype));
  return short_number(g.typical_median) + "x a careful " + dt + " kernel (median), " + short_number(g.typical_p99) +
         "x (p99); worst element " + short_number(g.ulps_median) + " ulp (median), " + short_number(g.ulps_p99) +
         " ulp (p99); " + short_number(g.bound_median) + " of the bound (median), " + short_number(g.bound_p99) +
         " (p99); " + std::to_string(g.cases) + (g.cases == 1 ? " case" : " cases");
}

}  // namespace attncheck
