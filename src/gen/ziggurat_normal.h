// Standard normal draws by the ziggurat method (Marsaglia and Tsang, 2000),
// 256 layers: one 64-bit draw and one comparison for about 99% of the values,
// the exact density everywhere (the wedges and the tail are sampled exactly,
// not approximated). About ten times faster than std::normal_distribution,
// which the generators called once per element (gen_random.h).
//
// The common case (inside a layer's rectangle) is inline here: draw_tensor
// calls it once per element, and the call and the tables' lookup through a
// function were a third of its cost. The wedges and the tail stay in
// ziggurat_normal.cpp; the draws are the same, in the same order, either way.
#pragma once

#include <array>
#include <cstdint>

#include "gen/fast_rng.h"

namespace attncheck::gen {

namespace ziggurat_detail {

inline constexpr int kLayers = 256;

// The layers (ziggurat_normal.cpp builds them): x[i] the right edge of layer
// i, f[i] the density there; both kLayers + 1 long.
struct Tables {
  std::array<double, kLayers + 1> x{};
  std::array<double, kLayers + 1> f{};
  Tables();
};

inline const Tables& tables() {
  static const Tables t;  // thread-safe initialisation
  return t;
}

// The rest of one draw whose first try, w in `layer`, fell outside the
// layer's rectangle: the wedge or the tail, then further tries as needed.
double outside_rectangle(FastRng& r, int layer, bool negative, double w);

}  // namespace ziggurat_detail

// One N(0, 1) value.
inline double ziggurat_normal(FastRng& r) {
  const ziggurat_detail::Tables& t = ziggurat_detail::tables();
  const uint64_t bits = r();
  const int layer = static_cast<int>(bits & 0xff);
  const bool negative = (bits >> 8) & 1;
  const double u = static_cast<double>(bits >> 11) * 0x1.0p-53;  // independent of the low 9 bits
  const double w = u * t.x[layer];
  if (w < t.x[layer + 1]) return negative ? -w : w;  // inside the layer's rectangle
  return ziggurat_detail::outside_rectangle(r, layer, negative, w);
}

}  // namespace attncheck::gen
