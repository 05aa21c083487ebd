// Effective scale and weight mass, read off the implementation's weights.
//
// With V = identity the output row is p [kv_len]. Correct attention has
// log p_j = s_j - logsumexp(s) for the exact logits s, so within a row
// log p_j - mean(log p) = a * (s_j - mean(s)) with a = 1; an implementation
// that uses another scale has a = its scale / the requested one. The row's
// intercept absorbs the denominator, which the mass sum_j p_j shows instead.
#include <algorithm>
#include <cmath>

#include "diagnosis/measurement_steps.h"
#include "problem/transforms.h"

namespace attncheck {

namespace {

constexpr int64_t kRows = 4, kKeys = 16;

// The requested scale, or the default where it is unusable for a probe
// (0 or not finite gives logits of no size).
double probe_scale(const Problem& failing) {
  const double s = failing.effective_scale();
  return std::isfinite(s) && s != 0 ? failing.scale : NAN;
}

}  // namespace

std::vector<std::string> measure_weights(Implementation& impl, const Problem& failing, ProbeBudget& budget,
                                         bool& found) {
  found = false;
  const Shape shape{1, 1, kRows, kKeys, failing.shape.head_dim, 1};
  const Problem p = with_identity_values(gaussian_probe(failing.dtype, shape, probe_scale(failing), 1.5, 0x5ca1e));
  const std::optional<ProbeRun> r = budget.run(impl, p);
  if (!r || r->correct) return {};

  // Below this a stored weight has lost its relative precision (subnormal f16).
  const double tiny = std::max(1e-6, 64 * min_normal(p.dtype));
  double sxx = 0, sxy = 0, syy = 0;
  int fitted_rows = 0;
  std::vector<double> mass;
  for (int64_t i = 0; i < kRows; ++i) {
    const std::vector<long double> s = row_logits(p, 0, i);
    std::vector<double> x, y;
    double m = 0;
    bool finite = true;
    for (int64_t j = 0; j < kKeys; ++j) {
      const double w = r->out[p.out_at(0, i, j)];
      finite = finite && std::isfinite(w);
      m += w;
      if (std::isfinite(w) && w > tiny) {
        x.push_back(static_cast<double>(s[j]));
        y.push_back(std::log(w));
      }
    }
    if (finite) mass.push_back(m);
    if (x.size() < 3) continue;
    ++fitted_rows;
    double mx = 0, my = 0;
    for (std::size_t n = 0; n < x.size(); ++n) mx += x[n] / x.size(), my += y[n] / y.size();
    for (std::size_t n = 0; n < x.size(); ++n) {
      sxx += (x[n] - mx) * (x[n] - mx);
      sxy += (x[n] - mx) * (y[n] - my);
      syy += (y[n] - my) * (y[n] - my);
    }
  }

  std::vector<std::string> said;
  if (fitted_rows >= 2 && sxx > 0 && syy > 0) {
    const double a = sxy / sxx, r2 = sxy * sxy / (sxx * syy);
    if (r2 >= 0.99 && std::abs(a - 1) > 0.02)
      said.push_back("behaves like " + significant(a) + " times the requested scale");
  }
  if (mass.size() >= 2) {
    std::sort(mass.begin(), mass.end());
    const double median = mass[mass.size() / 2], lo = mass.front(), hi = mass.back();
    const double tol = std::max(0.01, 4 * unit_roundoff(p.dtype));
    // Every row on the same side of 1: a denominator fault, not noise.
    if (std::abs(median - 1) > tol && (lo - 1) * (hi - 1) > 0) {
      // Two digits, more where two would print the ends alike (2.5 to 2.52: "2.5 to 2.5").
      int d = 2;
      while (d < 6 && significant(lo, d) == significant(hi, d)) ++d;
      std::string spread = hi - lo > 0.02 ? significant(lo, d) + " to " + significant(hi, d) + " by row; " : "";
      said.push_back("weights sum to " + significant(median, 2) + " (" + spread +
                     (median < 1 ? "extra mass in the denominator)" : "mass missing from the denominator)"));
    }
  }
  found = !said.empty();
  return said;
}

}  // namespace attncheck
