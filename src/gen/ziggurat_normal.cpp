#include "gen/ziggurat_normal.h"

#include <cmath>

namespace attncheck::gen::ziggurat_detail {

namespace {

// x[0] = V / f(R) (the base layer's width, tail included as area), x[1] = R,
// x[i + 1] = f^-1(f(x[i]) + V / x[i]), x[256] = 0, for the unnormalised
// density f(x) = exp(-x^2 / 2). Every layer has area V. R and V for 256
// layers are Marsaglia and Tsang's.
constexpr double kR = 3.6541528853610088;
constexpr double kV = 0.00492867323399;

double density(double x) { return std::exp(-0.5 * x * x); }

// |x| beyond R (Marsaglia's tail method).
double tail(FastRng& r) {
  for (;;) {
    const double a = -std::log1p(-r.next_unit()) / kR;  // log of (0, 1]
    const double b = -std::log1p(-r.next_unit());
    if (2.0 * b >= a * a) return kR + a;
  }
}

}  // namespace

Tables::Tables() {
  x[0] = kV / density(kR);
  x[1] = kR;
  for (int i = 1; i < kLayers - 1; ++i) x[i + 1] = std::sqrt(-2.0 * std::log(density(x[i]) + kV / x[i]));
  x[kLayers] = 0.0;
  for (int i = 0; i <= kLayers; ++i) f[i] = density(x[i]);  // the base layer (0) has no wedge
}

double outside_rectangle(FastRng& r, int layer, bool negative, double w) {
  const Tables& t = tables();
  for (;;) {
    if (layer == 0) {
      const double z = tail(r);
      return negative ? -z : z;
    }
    // The wedge between x[layer + 1] and x[layer]: accept under the density.
    const double y = t.f[layer] + r.next_unit() * (t.f[layer + 1] - t.f[layer]);
    if (y < density(w)) return negative ? -w : w;
    // Rejected: a new try, as from the start.
    const uint64_t bits = r();
    layer = static_cast<int>(bits & 0xff);
    negative = (bits >> 8) & 1;
    const double u = static_cast<double>(bits >> 11) * 0x1.0p-53;
    w = u * t.x[layer];
    if (w < t.x[layer + 1]) return negative ? -w : w;
  }
}

}  // namespace attncheck::gen::ziggurat_detail
