#include "problem/kv_storage.h"

#include <array>
#include <cmath>
#include <cstring>
#include <sstream>

#include "problem/kv_codes.h"
#include "problem/kv_encode.h"
#include "problem/problem.h"

namespace attncheck {

// KvFormat's values are the ABI's (kv_format.h was written before plugin_v3.h landed).
static_assert(static_cast<int>(KvFormat::dtype) == ATTNCHECK_KV_DTYPE && static_cast<int>(KvFormat::f16) == ATTNCHECK_KV_F16 &&
              static_cast<int>(KvFormat::bf16) == ATTNCHECK_KV_BF16 &&
              static_cast<int>(KvFormat::fp8_e4m3) == ATTNCHECK_KV_FP8_E4M3 &&
              static_cast<int>(KvFormat::fp8_e5m2) == ATTNCHECK_KV_FP8_E5M2 &&
              static_cast<int>(KvFormat::int8) == ATTNCHECK_KV_INT8 && static_cast<int>(KvFormat::int4) == ATTNCHECK_KV_INT4 &&
              static_cast<int>(KvFormat::q8_0) == ATTNCHECK_KV_Q8_0 && static_cast<int>(KvFormat::q4_0) == ATTNCHECK_KV_Q4_0);

namespace {

constexpr int64_t kKvBlock = 32;  // channels of a Q8_0 or Q4_0 block

struct Side {
  KvFormat format;
  ScaleGranularity granularity;
  const std::vector<double>* real;
  const std::vector<double>* scales;
  int64_t channels;
  const char* name;  // "k" or "v"
};

Side side_of(const Problem& p, bool is_k) {
  return is_k ? Side{p.k_format, p.k_scale_granularity, &p.k, &p.k_scales, p.shape.head_dim, "k"}
              : Side{p.v_format, p.v_scale_granularity, &p.v, &p.v_scales, p.shape.value_dim, "v"};
}

int64_t row_bytes(const Side& s, DType t) { return kv_row_units(s.format, s.channels) * kv_unit_bytes(s.format, t); }

uint16_t f16_bits(double x) {
  uint16_t bits;
  encode_element(DType::f16, x, &bits);
  return bits;
}

// A dead row: NaN codes where the format has one, the extreme code otherwise, NaN d in blocks.
void poison_row(KvFormat f, int64_t channels, uint8_t* units) {
  const int64_t blocks = info(f).block_scaled ? channels / kKvBlock : 0;
  for (int64_t m = 0; m < blocks; ++m) put_block_d(f, units, m, 0x7E00);
  uint32_t code = 0;
  switch (f) {
    case KvFormat::f16: code = 0x7E00; break;
    case KvFormat::bf16: code = 0x7FC0; break;
    case KvFormat::fp8_e4m3: code = 0x7F; break;  // vLLM's fill of unused slots
    case KvFormat::fp8_e5m2: code = 0x7F; break;
    case KvFormat::int8: code = 0x80; break;       // -128
    case KvFormat::int4: code = 0; break;          // nibble 0: -8
    default: code = 0; break;                      // blocks: their d is NaN
  }
  for (int64_t c = 0; c < channels; ++c) put_code(f, units, c, code);
}

// One live row of a block format with its blocks' d given: code = x / d exactly, or why not.
std::string encode_block_row(KvFormat f, const double* x, const double* d, int64_t channels, uint8_t* units) {
  const double lo = f == KvFormat::q8_0 ? -128 : -8, hi = f == KvFormat::q8_0 ? 127 : 7;
  for (int64_t m = 0; m < channels / kKvBlock; ++m) put_block_d(f, units, m, f16_bits(d[m]));
  for (int64_t c = 0; c < channels; ++c) {
    const double dm = d[c / kKvBlock];
    const double n = dm == 0 ? (x[c] == 0 ? 0.0 : NAN) : x[c] / dm;
    if (!(n == std::floor(n) && n >= lo && n <= hi && n * dm == x[c])) {
      std::ostringstream os;
      os << "channel " << c << " holds " << x[c] << ", which is not an integer code times its block's d = " << dm;
      return os.str();
    }
    const int32_t code = static_cast<int32_t>(n);
    put_code(f, units, c, f == KvFormat::q8_0 ? static_cast<uint32_t>(static_cast<uint8_t>(static_cast<int8_t>(code)))
                                              : static_cast<uint32_t>(code + 8));
  }
  return "";
}

// Encodes row (b, h, j) of one side into `units`; "" or why its real values are not stored exactly.
std::string encode_live_row(const Problem& p, const Side& s, const std::vector<float>& scale_array, int64_t b,
                            int64_t h, int64_t j, uint8_t* units) {
  const int64_t kvh = p.shape.kv_head_count();
  const double* x = s.real->data() + ((b * kvh + h) * p.shape.kv_len + j) * s.channels;
  std::string why;
  if (info(s.format).block_scaled) {
    const int64_t blocks = s.channels / kKvBlock;
    why = encode_block_row(s.format, x, s.scales->data() + ((b * kvh + h) * p.shape.kv_len + j) * blocks, s.channels,
                           units);
  } else {
    RowScale rs;
    if (info(s.format).scaled) {
      const std::array<int64_t, 3> st = scale_strides(s.granularity, kvh, s.channels);
      rs.data = scale_array.data() + b * st[0] + h * st[1];
      rs.channel_stride = st[2];
    }
    why = encode_row(s.format, p.dtype, x, s.channels, rs, units);
    if (why.empty()) {  // rounded (not refused) unless exact: decode and compare
      std::vector<double> back(static_cast<std::size_t>(s.channels));
      decode_row(s.format, p.dtype, units, s.channels, rs, back.data());
      for (int64_t c = 0; c < s.channels && why.empty(); ++c)
        if (back[c] != x[c]) {
          std::ostringstream os;
          os << "channel " << c << " holds " << x[c] << ", which " << kv_format_name(s.format)
             << " does not store exactly with its scale (nearest " << back[c] << ")";
          why = os.str();
        }
    }
  }
  return why;
}

}  // namespace

int64_t kv_scales_size(const Problem& p, bool is_k) {
  const Side s = side_of(p, is_k);
  const int64_t kvh = p.shape.kv_head_count();
  if (info(s.format).block_scaled) return p.shape.batch * kvh * p.shape.kv_len * (s.channels / kKvBlock);
  if (info(s.format).scaled) return scale_count(s.granularity, p.shape.batch, kvh, s.channels);
  return 0;
}

int64_t kv_stored_bytes(const Problem& p, bool is_k) {
  const Side s = side_of(p, is_k);
  return p.shape.batch * p.shape.kv_head_count() * p.shape.kv_len * row_bytes(s, p.dtype);
}

void kv_stored_strides(const Problem& p, bool is_k, int64_t* stride) {
  const Side s = side_of(p, is_k);
  const int64_t units = kv_row_units(s.format, s.channels);
  stride[3] = 1;
  stride[2] = units;
  stride[1] = p.shape.kv_len * units;
  stride[0] = p.shape.kv_head_count() * p.shape.kv_len * units;
}

std::vector<float> kv_scale_array(const Problem& p, bool is_k) {
  const Side s = side_of(p, is_k);
  if (!info(s.format).scaled) return {};
  return std::vector<float>(s.scales->begin(), s.scales->end());
}

KvScale kv_scale_view(const Problem& p, bool is_k, const float* data) {
  const Side s = side_of(p, is_k);
  KvScale k;
  if (!info(s.format).scaled) return k;
  k.data = data;
  const std::array<int64_t, 3> st = scale_strides(s.granularity, p.shape.kv_head_count(), s.channels);
  for (int a = 0; a < 3; ++a) k.stride[a] = st[a];
  return k;
}

std::vector<double> kv_view_v_scales(const Problem& p) {
  const Shape& s = p.shape;
  const int64_t kvh = s.kv_head_count();
  // rows of k's array, each `from` scales wide, of which V reads the first `to`
  int64_t rows = 0, from = 0, to = 0;
  if (info(p.k_format).block_scaled) {
    rows = s.batch * kvh * s.kv_len, from = s.head_dim / kKvBlock, to = s.value_dim / kKvBlock;
  } else if (info(p.k_format).scaled && p.k_scale_granularity == ScaleGranularity::per_kv_head_channel) {
    rows = kvh, from = s.head_dim, to = s.value_dim;
  } else {
    return p.k_scales;
  }
  std::vector<double> v(static_cast<std::size_t>(rows * to));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < to; ++c) v[static_cast<std::size_t>(r * to + c)] = p.k_scales[static_cast<std::size_t>(r * from + c)];
  return v;
}

void encode_kv_stored(const Problem& p, bool is_k, uint8_t* dst) {
  const Side s = side_of(p, is_k);
  const int64_t kvh = p.shape.kv_head_count(), rb = row_bytes(s, p.dtype);
  const std::vector<float> scales = kv_scale_array(p, is_k);
  std::memset(dst, 0, static_cast<std::size_t>(kv_stored_bytes(p, is_k)));
  for (int64_t b = 0; b < p.shape.batch; ++b)
    for (int64_t h = 0; h < kvh; ++h)
      for (int64_t j = 0; j < p.shape.kv_len; ++j) {
        uint8_t* units = dst + ((b * kvh + h) * p.shape.kv_len + j) * rb;
        // A dead key (j >= Lk) holds the codes of its values when they are exactly codes of
        // the format (the dead d too, from the scales), else poison, like a live row that is
        // not (never, in a consistent problem).
        if (!encode_live_row(p, s, scales, b, h, j, units).empty()) poison_row(s.format, s.channels, units);
      }
}

std::string kv_storage_inconsistency(const Problem& p) {
  std::ostringstream os;
  for (const bool is_k : {true, false}) {
    const Side s = side_of(p, is_k);
    const int raw = static_cast<int>(s.format);
    if (!find_kv_format(raw)) {
      os << s.name << "_format " << raw << " is not a format";
      return os.str();
    }
    const int64_t want = kv_scales_size(p, is_k);
    if (static_cast<int64_t>(s.scales->size()) != want) {
      os << s.name << "_scales holds " << s.scales->size() << " values but " << kv_format_name(s.format) << " needs "
         << want;
      return os.str();
    }
    if (s.format == KvFormat::dtype) {
      if (s.granularity != ScaleGranularity::per_tensor)
        return std::string(s.name) + "_scale_granularity is set for a dtype-stored " + s.name + " (it must be per_tensor)";
      continue;
    }
    if (!kv_format_allows(s.format, p.dtype)) {
      os << s.name << "_format " << kv_format_name(s.format) << " does not come with dtype " << dtype_name(p.dtype);
      return os.str();
    }
    if (!kv_channels_fit(s.format, s.channels)) {
      os << s.name << "'s " << s.channels << " channels are not a whole number of " << kv_format_name(s.format)
         << " units";
      return os.str();
    }
    if (!info(s.format).scaled && s.granularity != ScaleGranularity::per_tensor)
      return std::string(s.name) + "_scale_granularity is set for an unscaled format (it must be per_tensor)";
    for (std::size_t i = 0; i < s.scales->size(); ++i) {
      const double x = (*s.scales)[i];
      const bool block = info(s.format).block_scaled;
      const bool ok = block ? std::isfinite(x) && round_to(DType::f16, x) == x
                            : std::isfinite(x) && x > 0 && static_cast<double>(static_cast<float>(x)) == x;
      if (!ok) {
        os << s.name << "_scales[" << i << "] = " << x
           << (block ? " is not a finite binary16 (a block's d)" : " is not a finite float32 > 0 (a scale)");
        return os.str();
      }
    }
  }
  if (!p.kv_formatted()) return "";
  if (p.packed_k() || p.paged())
    return "stored K and V formats with packed or paged keys (this attncheck stores formats in padded keys only)";
  if (p.is_backward()) return "stored K and V formats with a dout: backward is never called for quantized calls";
  if (!(p.layouts.k.dense_bhsd() && p.layouts.v.dense_bhsd()))
    return "stored K and V formats with a k or v layout (stored tensors are dense here)";
  // Every live row stores its real values exactly.
  const int64_t kvh = p.shape.kv_head_count();
  for (const bool is_k : {true, false}) {
    const Side s = side_of(p, is_k);
    if (s.format == KvFormat::dtype) continue;
    const std::vector<float> scales = kv_scale_array(p, is_k);
    std::vector<uint8_t> row(static_cast<std::size_t>(row_bytes(s, p.dtype)));
    for (int64_t b = 0; b < p.shape.batch; ++b)
      for (int64_t h = 0; h < kvh; ++h)
        for (int64_t j = 0; j < p.kv_len_of(b); ++j)
          if (const std::string why = encode_live_row(p, s, scales, b, h, j, row.data()); !why.empty()) {
            os << s.name << " key " << j << " of sequence " << b << ", kv head " << h << ": " << why;
            return os.str();
          }
  }
  return "";
}

double kv_element_rounding(const Problem& p, bool is_k) {
  const KvFormat f = is_k ? p.k_format : p.v_format;
  if (f == KvFormat::dtype) return 0;
  const bool exact_in_f32 = !info(f).scaled;  // F16, BF16, Q8_0, Q4_0: exact in binary32
  if (exact_in_f32 && p.dtype == DType::f32) return 0;
  return unit_roundoff(p.dtype);
}

}  // namespace attncheck
