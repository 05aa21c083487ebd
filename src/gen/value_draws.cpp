// The value families of GenOptions (value_draws.h). The order of the random
// draws here is what every seed's problem depends on: change nothing in it
// without re-pinning tests (properties/generator_properties_test.cpp,
// V1DrawsAreUnchanged and V2AndBackwardDrawsAreUnchanged). The fuzz targets'
// families (kSpecials, kRawBits) read their own choices only when asked for.
#include "gen/value_draws.h"

#include <array>
#include <cmath>
#include <iterator>
#include <limits>

#include "gen/gen_options.h"

namespace attncheck::gen {

namespace {

template <class C>
double edge_value(C& r, DType t) {
  const double palette[] = {0.0, -0.0, min_subnormal(t), min_normal(t), max_finite(t), 1.0, 0.5,
                            std::sqrt(max_finite(t)), 3 * min_subnormal(t), max_finite(t) / 4};
  const double x = palette[r.integer(0, std::size(palette) - 1)];
  return r.chance(0.5) ? -x : x;
}

// lo and hi: log2 of the dtype's smallest subnormal and largest finite value
// (reckoned once per tensor, not per element).
template <class C>
double wide_value(C& r, double lo, double hi) {
  const double x = std::exp2(lo + r.unit() * (hi - lo));
  return r.chance(0.5) ? -x : x;
}

// The dtype's edge values (kSpecials; index = selector & 15), each rounded to
// t: what the fuzz decoder's palette was before the generators served the fuzzers.
std::array<double, 16> special_palette(DType t) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double u = unit_roundoff(t);
  std::array<double, 16> p = {
      0.0,
      min_subnormal(t),
      3 * min_subnormal(t),
      min_normal(t) - min_subnormal(t),  // the largest subnormal
      min_normal(t),
      1.0,
      0.5,
      2.0,
      1.0 + 2 * u,                       // one ulp above 1
      max_finite(t),
      max_finite(t) / 4,
      std::sqrt(max_finite(t)),          // its square overflows: logits past the range
      64.0,                              // logits hundreds to thousands apart
      1000.0,
      kInf,
      std::numeric_limits<double>::quiet_NaN(),
  };
  for (double& x : p) x = round_to(t, x);
  return p;
}

}  // namespace

double fold_to_finite(DType t, double x) {
  if (std::isnan(x)) return max_finite(t);
  if (std::isinf(x)) return std::copysign(max_finite(t), x);
  return x;
}

template <class C>
double raw_value(C& r, DType t) {
  const uint64_t bits = r.bits(static_cast<int>(dtype_bytes(t)));
  return decode_element(t, &bits);  // little-endian: the low bytes are the element
}

// Selector s (one byte): below 96 palette[s & 15], negative when s & 16; below
// 160 the small value (s - 128) / 8 in [-4, 3.875] (ties, exact sums); else a
// raw bit pattern of t. Zero is +0.
template <class C>
double special_value(C& r, DType t) {
  const int64_t s = r.integer(0, 255);
  if (s < 96) {
    const double x = special_palette(t)[s & 15];
    return (s & 16) ? -x : x;
  }
  if (s < 160) return static_cast<double>(s - 128) / 8.0;
  return raw_value(r, t);
}

template <class C>
std::vector<double> draw_tensor(C& r, DType t, int64_t n, unsigned families, int64_t head_dim, int64_t row) {
  unsigned allowed[16];  // the families asked for, lowest bit first (no allocation: one per tensor)
  int64_t count = 0;
  for (unsigned f = 1; f <= kRawBits; f <<= 1)
    if (families & f) allowed[count++] = f;
  const unsigned family = count == 0 ? kGaussian : allowed[r.integer(0, count - 1)];
  r.note_family(family);
  if (family == kSpecials || family == kRawBits) {
    // One choice per element, no rounding: every value is the dtype's already.
    std::vector<double> out(static_cast<std::size_t>(n));
    if (family == kSpecials) {
      const std::array<double, 16> palette = special_palette(t);
      for (double& x : out) {
        const int64_t s = r.integer(0, 255);
        if (s < 96) x = (s & 16) ? -palette[s & 15] : palette[s & 15];
        else if (s < 160) x = static_cast<double>(s - 128) / 8.0;
        else x = raw_value(r, t);
      }
    } else {
      for (double& x : out) x = raw_value(r, t);
    }
    if (families & kFiniteOnly)
      for (double& x : out) x = fold_to_finite(t, x);
    return out;
  }
  // Logits of unit Gaussians have std sqrt(head_dim); scaling by g gives std
  // g^2 / sqrt(head_dim) after the default scale: make that 100..10000.
  const double huge = std::sqrt(std::exp2(7 + r.unit() * 6) * std::sqrt(static_cast<double>(head_dim)));
  std::vector<double> out(n);
  if (family == kModelLogits || family == kOutlierChannels || family == kPositive || family == kNearEqual) {
    // Logits of magnitude 30..50 when both q and k are scaled by g: g^2 = 30..50.
    const double g = std::sqrt(30 + 20 * r.unit());
    // A few outlier channels (as LLM activations have), 20..100 times larger.
    std::vector<uint8_t> outlier(static_cast<std::size_t>(row), 0);
    for (int k = 0; k < 1 + row / 32; ++k) outlier[r.integer(0, row - 1)] = 1;
    const double big = 20 + 80 * r.unit();
    const bool constant = r.chance(0.3);
    const double c = std::abs(r.gaussian()) + 0.5;
    for (int64_t i = 0; i < n; ++i) {
      double& x = out[i];
      switch (family) {
        case kModelLogits: x = r.gaussian() * g; break;
        case kOutlierChannels: x = r.gaussian() * (outlier[i % row] ? big : 1.0); break;
        case kPositive: x = constant ? c : std::abs(r.gaussian()) + 0.1; break;
        default: x = 1 + 1e-3 * r.gaussian(); break;  // kNearEqual
      }
    }
    round_n(t, out.data(), n);  // what round_to does element by element, a row at a time
    if (families & kFiniteOnly)
      for (double& x : out) x = fold_to_finite(t, x);
    return out;
  }
  const double wide_lo = std::log2(min_subnormal(t)), wide_hi = std::log2(max_finite(t));
  for (double& x : out) {
    switch (family) {
      case kSmallInts: x = static_cast<double>(r.integer(-3, 3)); break;
      case kWide: x = wide_value(r, wide_lo, wide_hi); break;
      case kEdge: x = r.chance(0.5) ? edge_value(r, t) : r.gaussian(); break;
      case kHugeLogits: x = r.gaussian() * huge; break;
      default: x = r.gaussian(); break;
    }
  }
  round_n(t, out.data(), n);
  if (families & kFiniteOnly)
    for (double& x : out) x = fold_to_finite(t, x);
  return out;
}

template std::vector<double> draw_tensor(RandomChoices&, DType, int64_t, unsigned, int64_t, int64_t);
template std::vector<double> draw_tensor(ByteChoices&, DType, int64_t, unsigned, int64_t, int64_t);
template double special_value(RandomChoices&, DType);
template double special_value(ByteChoices&, DType);
template double raw_value(RandomChoices&, DType);
template double raw_value(ByteChoices&, DType);

}  // namespace attncheck::gen
