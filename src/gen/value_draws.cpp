// The value families of GenOptions (value_draws.h). The order of the random
// draws here is what every seed's problem depends on: change nothing in it
// without re-pinning tests (properties/generator_properties_test.cpp,
// V1DrawsAreUnchanged and V2AndBackwardDrawsAreUnchanged). The fuzz targets'
// families (kSpecials, kRawBits) read their own choices only when asked for.
#include "gen/value_draws.h"

#include <algorithm>
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

// How often a tensor of options with report families is drawn from one of them.
constexpr double kReportTensorChance = 0.06;

// The families of the bug reports (kScaledUp, kSparseInts,
// kActivationOutliers; gen_options.h). Each tensor of such a family reads its
// own choices; without these bits not one choice changes.
template <class C>
std::vector<double> draw_report_tensor(C& r, DType t, int64_t n, unsigned family, unsigned families,
                                       int64_t head_dim, int64_t row) {
  std::vector<double> out;
  if (family == kScaledUp) {
    // Inputs scaled 3 to 10 times (reports: kernels right on unit inputs and
    // wrong on q, k scaled up, e.g. the softmax scale folded into exp2 with
    // too little precision, or f16 logits that only overflow past a few
    // times the unit range). The base is one of the families of ordinary
    // magnitude: the extreme ones (wide, edge, huge logits) are their own.
    unsigned base[8];
    int64_t count = 0;
    for (unsigned f : {kGaussian, kSmallInts, kModelLogits, kOutlierChannels, kPositive, kNearEqual})
      if (families & f) base[count++] = f;
    const unsigned from = count == 0 ? kGaussian : base[r.integer(0, count - 1)];
    out = draw_tensor(r, t, n, from, head_dim, row);
    const double factor = 3 + 7 * r.unit();
    for (double& x : out) {
      const double y = round_to(t, x * factor);
      if (std::isfinite(y)) x = y;  // never past the dtype's range: scaled, not overflowed
    }
    return out;
  }
  out.assign(static_cast<std::size_t>(n), 0.0);
  if (family == kSparseInts) {
    // Mostly zeros and a few small integers (reports reproduced with
    // torch.randint or one-hot inputs): exact in every dtype, the logits and
    // the weighted sums exact or nearly, ties everywhere; a kernel that reads
    // a wrong element or key shows it at once, in every dtype alike.
    const double density = 0.05 + 0.25 * r.unit();
    for (double& x : out)
      if (r.chance(density)) x = static_cast<double>(r.integer(1, 4)) * (r.chance(0.5) ? -1 : 1);
    return out;
  }
  // kActivationOutliers: the "massive activations" of trained LLMs: a few
  // tokens (the first, delimiters) carry a few channels 100 to 1000 times the
  // rest (reports: f16 q.k overflowing past 65504 on one token, per-tensor
  // quantisation scales, attention-sink tokens taking every weight).
  for (double& x : out) x = r.gaussian();
  const int64_t rows = std::max<int64_t>(1, n / std::max<int64_t>(row, 1));
  const int64_t channels = 1 + r.integer(0, 1), tokens = 1 + r.integer(0, 2);
  for (int64_t c = 0; c < channels; ++c) {
    const int64_t col = r.integer(0, row - 1);
    for (int64_t k = 0; k < tokens; ++k) {
      // The first token half the time (the attention sink), else any.
      const int64_t token = r.chance(0.5) ? 0 : r.integer(0, rows - 1);
      const std::size_t at = static_cast<std::size_t>(token * row + col);
      const double big = (100 + 900 * r.unit()) * (r.chance(0.5) ? -1 : 1);
      if (at < out.size()) out[at] = big;
    }
  }
  round_n(t, out.data(), n);
  for (double& x : out)
    if (!std::isfinite(x)) x = std::copysign(max_finite(t), x);
  return out;
}

template <class C>
std::vector<double> draw_tensor(C& r, DType t, int64_t n, unsigned families, int64_t head_dim, int64_t row) {
  // The bug reports' families now and then (kReportTensorChance), beside the
  // others rather than among them: a profile's tensors stay mostly what they were.
  constexpr unsigned kReportTensorFamilies = kScaledUp | kSparseInts | kActivationOutliers;
  if ((families & kReportTensorFamilies) && r.chance(kReportTensorChance)) {
    unsigned report[3];
    int64_t k = 0;
    for (unsigned f : {kScaledUp, kSparseInts, kActivationOutliers})
      if (families & f) report[k++] = f;
    const unsigned family = report[r.integer(0, k - 1)];
    r.note_family(family);
    std::vector<double> out = draw_report_tensor(r, t, n, family, families, head_dim, row);
    if (families & kFiniteOnly)
      for (double& x : out) x = fold_to_finite(t, x);
    return out;
  }
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
