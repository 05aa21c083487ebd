#include "problem_decoder.h"

#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

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

// ---- ABI v2 fields, decoded from the bytes after the mask ---------------
// Missing bytes read as zero and zero means "none" at every step, so an input
// written before v2 (its bytes end with the mask) decodes to the same v1 call.

// The proper divisors of heads (kv_heads for a grouped call); empty for 1 head.
std::vector<int64_t> proper_divisors(int64_t heads) {
  std::vector<int64_t> d;
  for (int64_t n = 1; n < heads; ++n)
    if (heads % n == 0) d.push_back(n);
  return d;
}

// k and v decoded for `heads` kv heads cut to the first `kv_heads` of each batch.
void group_kv(Problem& p, int64_t kv_heads) {
  const Shape& s = p.shape;
  std::vector<double> k, v;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t t = 0; t < kv_heads; ++t) {
      const int64_t from = b * s.heads + t;  // still [batch][heads][..]
      k.insert(k.end(), p.k.begin() + p.k_at(from, 0, 0), p.k.begin() + p.k_at(from + 1, 0, 0));
      v.insert(v.end(), p.v.begin() + p.v_at(from, 0, 0), p.v.begin() + p.v_at(from + 1, 0, 0));
    }
  p.shape.kv_heads = kv_heads;
  p.k = std::move(k);
  p.v = std::move(v);
}

// Selector byte: the order (one of the six permutations; 0 is BHSD, 1 BSHD),
// then one byte per axis for its gap: 0, 1, 2, 3, 5, 7, 16 or 17 elements.
TensorLayout layout_of(FuzzedDataProvider& in) {
  static constexpr std::array<std::array<uint8_t, 3>, 6> kOrders = {
      {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}};
  static constexpr int64_t kGaps[8] = {0, 1, 2, 3, 5, 7, 16, 17};
  TensorLayout l;
  l.order = kOrders[in.ConsumeIntegral<uint8_t>() % 6];
  for (int64_t& g : l.gap) g = kGaps[in.ConsumeIntegral<uint8_t>() % 8];
  return l;
}

// A mask decoded in full, kept only along the axes `how` varies along (the
// entries at index 0 of the others stand for all).
std::vector<uint8_t> broadcast_mask(const Problem& p, const Broadcast& how) {
  const Shape& s = p.shape;
  std::vector<uint8_t> m;
  for (int64_t b = 0; b < (how.per_batch ? s.batch : 1); ++b)
    for (int64_t h = 0; h < (how.per_head ? s.heads : 1); ++h)
      for (int64_t i = 0; i < (how.per_row ? s.q_len : 1); ++i)
        for (int64_t j = 0; j < s.kv_len; ++j) m.push_back(p.mask[((b * s.heads + h) * s.q_len + i) * s.kv_len + j]);
  return m;
}

Broadcast broadcast_of(uint8_t bits) { return {(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0}; }

// What the padding holds (selector byte): 0 the decoded values, 1 NaN (+max
// under ValueMix::finite_only, whose every input is finite), 2 +max, 3 -max.
void fill_padding(FuzzedDataProvider& in, ValueMix mix, Problem& p) {
  const uint8_t how = in.ConsumeIntegral<uint8_t>() % 4;
  if (how == 0) return;
  double fill = how == 1 ? kNaN : how == 2 ? max_finite(p.dtype) : -max_finite(p.dtype);
  if (mix == ValueMix::finite_only) fill = fold_to_finite(p.dtype, fill);
  const Shape& s = p.shape;
  const int64_t kvh = s.kv_head_count();
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = p.q_len_of(b); i < s.q_len; ++i)
        for (int64_t d = 0; d < s.head_dim; ++d) p.q[p.q_at(b * s.heads + h, i, d)] = fill;
    for (int64_t t = 0; t < kvh; ++t)
      for (int64_t j = p.kv_len_of(b); j < s.kv_len; ++j) {
        for (int64_t d = 0; d < s.head_dim; ++d) p.k[p.k_at(b * kvh + t, j, d)] = fill;
        for (int64_t c = 0; c < s.value_dim; ++c) p.v[p.v_at(b * kvh + t, j, c)] = fill;
      }
  }
}

// Selector byte: 0 none; else a soft-cap from {0.5, 1, 2, 5, 20, 30, 50} or,
// for selectors 8 mod 8, a raw f32 pattern (its magnitude; 1 when not finite or 0).
double softcap_of(FuzzedDataProvider& in) {
  static constexpr double kCaps[7] = {0.5, 1, 2, 5, 20, 30, 50};
  const uint8_t s = in.ConsumeIntegral<uint8_t>();
  if (s == 0) return 0;
  if (s % 8 != 0) return kCaps[s % 8 - 1];
  const double x = std::abs(raw_value(in, DType::f32));
  return std::isfinite(x) && x > 0 ? x : 1;
}

// One per-head float value (a slope or a sink), finite.
double per_head_value(FuzzedDataProvider& in, const std::array<double, 16>& f32_palette) {
  return fold_to_finite(DType::f32, element(in, DType::f32, f32_palette, ValueMix::finite_only));
}

// The fields after the mask. Word w (16 bits, 0 when missing) says which are
// present, by the ATTNCHECK_FEATURE_* bit positions (bit 0, MASK, asks for a
// broadcast mask). Each present field then reads its bytes in bit order:
//   MASK    1 byte: bits 0..2 per_batch, per_head, per_row of the mask
//   GQA     1 byte: kv_heads = proper_divisors(heads)[byte % count]
//   STRIDES q, k, v, out: 4 bytes each (layout_of)
//   LENGTHS 1 byte (bit 0 q_lens, bit 1 kv_lens), 1 byte per batch and length
//           (len = byte % (extent + 1)), 1 byte for the padding (fill_padding)
//   WINDOW  2 bytes, left and right: 0 unbounded, else (byte - 1) % (kv_len + 2)
//   SOFTCAP softcap_of
//   BIAS    1 byte broadcast bits, then one element per stored entry (NaN and
//           +inf read as -inf with ValueMix::any, folded finite otherwise)
//   ALIBI   1 byte: even, the 2^(-8k/heads) family; odd, one value per head
//   SINKS   one value per head
//   LSE     no bytes
// Fields of features outside `allowed` are read and then dropped, so the same
// bytes decode to the same call, less what an implementation cannot take.
void decode_features(FuzzedDataProvider& in, ValueMix mix, FeatureBits allowed, Problem& p) {
  const uint16_t w = in.ConsumeIntegral<uint16_t>();
  const bool v2 = (allowed & ~kV1Features) != 0;
  const Shape& s = p.shape;
  if (w & ATTNCHECK_FEATURE_MASK) {
    const Broadcast how = broadcast_of(in.ConsumeIntegral<uint8_t>());
    if (v2 && p.has_mask()) { p.mask = broadcast_mask(p, how); p.mask_broadcast = how; }
  }
  if (w & ATTNCHECK_FEATURE_GQA) {
    const std::vector<int64_t> d = proper_divisors(s.heads);
    const uint8_t pick = in.ConsumeIntegral<uint8_t>();
    if (!d.empty() && (allowed & ATTNCHECK_FEATURE_GQA)) group_kv(p, d[pick % d.size()]);
  }
  if (w & ATTNCHECK_FEATURE_STRIDES) {
    ViewLayouts l;
    for (TensorLayout* t : {&l.q, &l.k, &l.v, &l.out}) *t = layout_of(in);
    if (allowed & ATTNCHECK_FEATURE_STRIDES) p.layouts = l;
  }
  if (w & ATTNCHECK_FEATURE_LENGTHS) {
    const uint8_t which = in.ConsumeIntegral<uint8_t>();
    std::vector<int32_t> q_lens, kv_lens;
    for (int64_t b = 0; b < s.batch && (which & 1); ++b)
      q_lens.push_back(static_cast<int32_t>(in.ConsumeIntegral<uint8_t>() % (s.q_len + 1)));
    for (int64_t b = 0; b < s.batch && (which & 2); ++b)
      kv_lens.push_back(static_cast<int32_t>(in.ConsumeIntegral<uint8_t>() % (s.kv_len + 1)));
    if (allowed & ATTNCHECK_FEATURE_LENGTHS) {
      p.q_lens = std::move(q_lens);
      p.kv_lens = std::move(kv_lens);
      fill_padding(in, mix, p);
    } else {
      in.ConsumeIntegral<uint8_t>();  // the padding selector, unused
    }
  }
  if (w & ATTNCHECK_FEATURE_WINDOW) {
    int64_t side[2];
    for (int64_t& x : side) {
      const uint8_t b = in.ConsumeIntegral<uint8_t>();
      x = b == 0 ? -1 : (b - 1) % (s.kv_len + 2);
    }
    if (allowed & ATTNCHECK_FEATURE_WINDOW) { p.window_left = side[0]; p.window_right = side[1]; }
  }
  if (w & ATTNCHECK_FEATURE_SOFTCAP) {
    const double cap = softcap_of(in);
    if (allowed & ATTNCHECK_FEATURE_SOFTCAP) p.softcap = cap;
  }
  if (w & ATTNCHECK_FEATURE_BIAS) {
    const Broadcast how = broadcast_of(in.ConsumeIntegral<uint8_t>());
    const std::array<double, 16> pal = palette(p.dtype);
    std::vector<double> bias(static_cast<std::size_t>(how.size(s)));
    for (double& x : bias) {
      x = element(in, p.dtype, pal, mix);  // finite already under finite_only
      if (std::isnan(x) || x == kInf) x = -kInf;  // the spec's bias: no NaN, no +inf
    }
    if (allowed & ATTNCHECK_FEATURE_BIAS) { p.bias = std::move(bias); p.bias_broadcast = how; }
  }
  const std::array<double, 16> f32_pal = palette(DType::f32);
  if (w & ATTNCHECK_FEATURE_ALIBI) {
    std::vector<double> slopes(static_cast<std::size_t>(s.heads));
    const bool family = in.ConsumeIntegral<uint8_t>() % 2 == 0;
    for (int64_t h = 0; h < s.heads; ++h)
      slopes[h] = family ? round_to(DType::f32, std::exp2(-8.0 * static_cast<double>(h + 1) / static_cast<double>(s.heads)))
                         : per_head_value(in, f32_pal);
    if (allowed & ATTNCHECK_FEATURE_ALIBI) p.alibi_slopes = std::move(slopes);
  }
  if (w & ATTNCHECK_FEATURE_SINKS) {
    std::vector<double> sinks(static_cast<std::size_t>(s.heads));
    for (double& x : sinks) x = per_head_value(in, f32_pal);
    if (allowed & ATTNCHECK_FEATURE_SINKS) p.sinks = std::move(sinks);
  }
  if ((w & ATTNCHECK_FEATURE_LSE) && (allowed & ATTNCHECK_FEATURE_LSE)) p.lse_requested = true;
}

// ---- a backward problem's fields, decoded after the v2 fields -------------
// (decode_backward_problem). In reading order:
//   dout    one element per entry of [batch][heads][q_len][value_dim] (element())
//   padding 1 byte: what dout's padding rows hold, as fill_padding (0 the
//           decoded values, 1 NaN, 2 +max, 3 -max), read even without lengths
//   views   1 byte (% 4): 0 dense gradient views; 1 all four like q's; 2 each
//           its own (dout, dq, dk, dv: 4 bytes each, layout_of); 3 like the
//           forward views (dout as out, dq as q, dk as k, dv as v: PyTorch's
//           gradients take their tensor's strides). Dropped without STRIDES.
// Missing bytes are zero: dout all zero, dense views.
void decode_gradients(FuzzedDataProvider& in, ValueMix mix, FeatureBits allowed, Problem& p) {
  const Shape& s = p.shape;
  const std::array<double, 16> pal = palette(p.dtype);
  p.dout.resize(static_cast<std::size_t>(s.out_size()));
  for (double& x : p.dout) x = element(in, p.dtype, pal, mix);
  const uint8_t how = in.ConsumeIntegral<uint8_t>() % 4;
  if (how != 0) {
    double fill = how == 1 ? kNaN : how == 2 ? max_finite(p.dtype) : -max_finite(p.dtype);
    if (mix == ValueMix::finite_only) fill = fold_to_finite(p.dtype, fill);
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = p.q_len_of(bh / s.heads); i < s.q_len; ++i)
        for (int64_t c = 0; c < s.value_dim; ++c) p.dout[p.out_at(bh, i, c)] = fill;
  }
  ViewLayouts& l = p.layouts;
  TensorLayout views[4];  // dout, dq, dk, dv
  switch (in.ConsumeIntegral<uint8_t>() % 4) {
    case 1: for (TensorLayout& v : views) v = l.q; break;
    case 2: for (TensorLayout& v : views) v = layout_of(in); break;
    case 3: views[0] = l.out, views[1] = l.q, views[2] = l.k, views[3] = l.v; break;
    default: break;
  }
  if (allowed & ATTNCHECK_FEATURE_STRIDES) l.dout = views[0], l.dq = views[1], l.dk = views[2], l.dv = views[3];
}

Problem decode_from(FuzzedDataProvider& in, ValueMix mix, FeatureBits allowed, const DecoderLimits& limits) {
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
  if (!(allowed & ATTNCHECK_FEATURE_CAUSAL)) p.causal = Causal::none;
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
  if (!(allowed & ATTNCHECK_FEATURE_MASK)) p.mask.clear();
  decode_features(in, mix, allowed, p);
  return p;
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

Problem decode_problem(const uint8_t* data, std::size_t size, ValueMix mix, FeatureBits allowed,
                       const DecoderLimits& limits) {
  FuzzedDataProvider in(data, size);
  return decode_from(in, mix, allowed & ~kBackwardFeature, limits);
}

Problem decode_backward_problem(const uint8_t* data, std::size_t size, ValueMix mix, FeatureBits allowed,
                                const DecoderLimits& limits) {
  FuzzedDataProvider in(data, size);
  Problem p = decode_from(in, mix, allowed & ~kBackwardFeature, limits);
  decode_gradients(in, mix, allowed, p);
  return p;
}

}  // namespace attncheck::fuzz
