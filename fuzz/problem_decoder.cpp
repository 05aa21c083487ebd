#include "problem_decoder.h"

#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "fuzzed_data_provider.h"

namespace attncheck::fuzz {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

int64_t env_cap(const char* name, int64_t fallback) {
  const char* s = std::getenv(name);
  if (!s || !*s) return fallback;
  const long long v = std::strtoll(s, nullptr, 10);
  return v >= 1 ? v : fallback;
}

// The edge values of a dtype, unsigned (the selector byte chooses the sign).
// 16 entries: the index is the low 4 bits of the selector.
std::array<double, 16> palette(DType t) {
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
      kNaN,
  };
  for (double& x : p) x = round_to(t, x);
  return p;
}

double fold_to_finite(DType t, double x) {
  if (std::isnan(x)) return max_finite(t);
  if (std::isinf(x)) return std::copysign(max_finite(t), x);
  return x;
}

// One raw bit pattern of the dtype, decoded: as many input bytes as an
// element has (FuzzedDataProvider consumes just enough bytes for the range).
double raw_value(FuzzedDataProvider& in, DType t) {
  const DTypeInfo& d = info(t);
  const uint64_t all_ones = d.bytes >= 8 ? ~0ull : (1ull << (8 * d.bytes)) - 1;
  const uint64_t bits = in.ConsumeIntegralInRange<uint64_t>(0, all_ones);
  return d.decode(&bits);  // little-endian: the low bytes are the element
}

// One tensor element. Selector byte s:
//   s <  96: palette[s & 15], negative when s & 16
//   s < 160: the small value (s - 128) / 8, in [-4, 3.875]: ties, exact sums
//   else   : a raw bit pattern of the dtype (8, 4 or 2 more bytes)
double element(FuzzedDataProvider& in, DType t, const std::array<double, 16>& pal, ValueMix mix) {
  const uint8_t s = in.ConsumeIntegral<uint8_t>();
  double x;
  if (s < 96) x = (s & 16) ? -pal[s & 15] : pal[s & 15];
  else if (s < 160) x = (static_cast<int>(s) - 128) / 8.0;
  else x = raw_value(in, t);
  return mix == ValueMix::finite_only ? fold_to_finite(t, x) : x;
}

// Scale selector byte s: below 128 the default; else an explicit scale.
double scale_of(FuzzedDataProvider& in, const Problem& p, ValueMix mix) {
  const uint8_t s = in.ConsumeIntegral<uint8_t>();
  if (s < 128) return kNaN;
  const double d = static_cast<double>(p.shape.head_dim);
  double x;
  switch (s % 10) {
    case 0: x = 1 / std::sqrt(d); break;  // the default, given explicitly
    case 1: x = 1; break;
    case 2: x = 0; break;
    case 3: x = -1; break;
    case 4: x = 0.125; break;
    case 5: x = 1 / d; break;
    case 6: x = 16; break;
    default: x = raw_value(in, p.dtype); break;
  }
  x = round_to(p.dtype, x);
  if (mix == ValueMix::finite_only) x = fold_to_finite(p.dtype, x);
  return x;
}

enum class MaskKind { none, bits, empty_rows, all_visible };

void fill_mask(FuzzedDataProvider& in, MaskKind kind, Problem& p) {
  const Shape& s = p.shape;
  p.mask.assign(s.mask_size(), 1);
  if (kind == MaskKind::bits) {
    for (int64_t n = 0; n < s.mask_size(); n += 8) {
      const uint8_t byte = in.ConsumeIntegral<uint8_t>();
      for (int64_t b = 0; b < 8 && n + b < s.mask_size(); ++b) p.mask[n + b] = (byte >> b) & 1;
    }
  } else if (kind == MaskKind::empty_rows) {
    // One byte per row: bit 0 empties the row, else the row sees keys where bits 1..7 allow
    // (key j reads bit 1 + j % 7), so partial rows appear beside empty ones.
    for (int64_t r = 0; r < s.batch * s.heads * s.q_len; ++r) {
      const uint8_t byte = in.ConsumeIntegral<uint8_t>();
      for (int64_t j = 0; j < s.kv_len; ++j)
        p.mask[r * s.kv_len + j] = (byte & 1) ? 0 : ((byte >> (1 + j % 7)) & 1) | (byte == 0);
    }
  }
}

}  // namespace

const DecoderLimits& DecoderLimits::from_env() {
  static const DecoderLimits limits = [] {
    DecoderLimits l;
    l.max_batch = env_cap("ATTNCHECK_FUZZ_MAX_BATCH", l.max_batch);
    l.max_heads = env_cap("ATTNCHECK_FUZZ_MAX_HEADS", l.max_heads);
    l.max_len = env_cap("ATTNCHECK_FUZZ_MAX_LEN", l.max_len);
    l.max_dim = env_cap("ATTNCHECK_FUZZ_MAX_DIM", l.max_dim);
    return l;
  }();
  return limits;
}

Problem decode_problem(const uint8_t* data, std::size_t size, ValueMix mix, const DecoderLimits& limits) {
  FuzzedDataProvider in(data, size);
  Problem p;
  p.dtype = all_dtypes()[in.ConsumeIntegralInRange<std::size_t>(0, all_dtypes().size() - 1)].type;
  Shape& s = p.shape;
  s.batch = in.ConsumeIntegralInRange<int64_t>(1, limits.max_batch);
  s.heads = in.ConsumeIntegralInRange<int64_t>(1, limits.max_heads);
  s.q_len = in.ConsumeIntegralInRange<int64_t>(1, limits.max_len);
  s.kv_len = in.ConsumeIntegralInRange<int64_t>(1, limits.max_len);
  s.head_dim = in.ConsumeIntegralInRange<int64_t>(1, limits.max_dim);
  s.value_dim = in.ConsumeIntegralInRange<int64_t>(1, limits.max_dim);
  p.causal = static_cast<Causal>(in.ConsumeIntegralInRange<int>(0, 2));
  p.scale = scale_of(in, p, mix);
  const auto mask_kind = static_cast<MaskKind>(in.ConsumeIntegralInRange<int>(0, 3));

  const std::array<double, 16> pal = palette(p.dtype);
  auto tensor = [&](int64_t n) {
    std::vector<double> t(n);
    for (double& x : t) x = element(in, p.dtype, pal, mix);
    return t;
  };
  p.q = tensor(s.q_size());
  p.k = tensor(s.k_size());
  p.v = tensor(s.v_size());
  if (mask_kind != MaskKind::none) fill_mask(in, mask_kind, p);
  return p;
}

}  // namespace attncheck::fuzz
