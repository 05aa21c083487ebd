// The value families of GenOptions (value_draws.h). The order of the random
// draws here is what every seed's problem depends on: change nothing in it
// without re-pinning tests (properties/generator_properties_test.cpp, V1DrawsAreUnchanged).
#include "problem/value_draws.h"

#include <cmath>
#include <iterator>

#include "problem/gen_options.h"

namespace attncheck::gen {

namespace {

double edge_value(Rng& r, DType t) {
  const double palette[] = {0.0, -0.0, min_subnormal(t), min_normal(t), max_finite(t), 1.0, 0.5,
                            std::sqrt(max_finite(t)), 3 * min_subnormal(t), max_finite(t) / 4};
  const double x = palette[uniform(r, 0, std::size(palette) - 1)];
  return chance(r, 0.5) ? -x : x;
}

// lo and hi: log2 of the dtype's smallest subnormal and largest finite value
// (reckoned once per tensor, not per element).
double wide_value(Rng& r, double lo, double hi) {
  const double x = std::exp2(lo + unit(r) * (hi - lo));
  return chance(r, 0.5) ? -x : x;
}

}  // namespace

std::vector<double> draw_tensor(Rng& r, DType t, int64_t n, unsigned families, int64_t head_dim, int64_t row) {
  std::vector<unsigned> allowed;
  for (unsigned f = 1; f <= kNearEqual; f <<= 1)
    if (families & f) allowed.push_back(f);
  const unsigned family = allowed.empty() ? kGaussian : allowed[uniform(r, 0, allowed.size() - 1)];
  // Logits of unit Gaussians have std sqrt(head_dim); scaling by g gives std
  // g^2 / sqrt(head_dim) after the default scale: make that 100..10000.
  const double huge = std::sqrt(std::exp2(7 + unit(r) * 6) * std::sqrt(static_cast<double>(head_dim)));
  std::vector<double> out(n);
  if (family == kModelLogits || family == kOutlierChannels || family == kPositive || family == kNearEqual) {
    // Logits of magnitude 30..50 when both q and k are scaled by g: g^2 = 30..50.
    const double g = std::sqrt(30 + 20 * unit(r));
    // A few outlier channels (as LLM activations have), 20..100 times larger.
    std::vector<uint8_t> outlier(static_cast<std::size_t>(row), 0);
    for (int k = 0; k < 1 + row / 32; ++k) outlier[uniform(r, 0, row - 1)] = 1;
    const double big = 20 + 80 * unit(r);
    const bool constant = chance(r, 0.3);
    const double c = std::abs(gaussian(r)) + 0.5;
    for (int64_t i = 0; i < n; ++i) {
      double& x = out[i];
      switch (family) {
        case kModelLogits: x = gaussian(r) * g; break;
        case kOutlierChannels: x = gaussian(r) * (outlier[i % row] ? big : 1.0); break;
        case kPositive: x = constant ? c : std::abs(gaussian(r)) + 0.1; break;
        default: x = 1 + 1e-3 * gaussian(r); break;  // kNearEqual
      }
    }
    round_n(t, out.data(), n);  // what round_to does element by element, a row at a time
    return out;
  }
  const double wide_lo = std::log2(min_subnormal(t)), wide_hi = std::log2(max_finite(t));
  for (double& x : out) {
    switch (family) {
      case kSmallInts: x = static_cast<double>(uniform(r, -3, 3)); break;
      case kWide: x = wide_value(r, wide_lo, wide_hi); break;
      case kEdge: x = chance(r, 0.5) ? edge_value(r, t) : gaussian(r); break;
      case kHugeLogits: x = gaussian(r) * huge; break;
      default: x = gaussian(r); break;
    }
  }
  round_n(t, out.data(), n);
  return out;
}

}  // namespace attncheck::gen
