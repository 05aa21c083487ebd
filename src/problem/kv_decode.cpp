#include "problem/kv_decode.h"

#include "problem/kv_codes.h"

namespace attncheck {

namespace {

// The d of the block holding channel c, as a real value (a binary16, exact in double).
double kv_block_d_value(KvFormat f, const uint8_t* units, int64_t c) {
  return code_value(KvFormat::f16, get_block_d(f, units, c / info(f).unit_channels));
}

}  // namespace

RowScale row_scale(const KvScale& s, int64_t b, int64_t h) {
  if (s.data == nullptr) return {};
  return {s.data + b * s.stride[0] + h * s.stride[1], s.stride[2]};
}

double decode_channel(KvFormat f, DType dtype, const uint8_t* units, int64_t c, RowScale scale) {
  if (f == KvFormat::dtype) return decode_element(dtype, units + c * static_cast<int64_t>(dtype_bytes(dtype)));
  const double v = code_value(f, get_code(f, units, c));
  if (info(f).scaled) return v * static_cast<double>(scale.data[c * scale.channel_stride]);
  if (info(f).block_scaled) return v * kv_block_d_value(f, units, c);
  return v;
}

// The same values as decode_channel, a row at a time (kv_decode_test.cpp checks the two agree
// on every format): the 16-bit formats through the dtype rows' loops, the rest through the code
// table, then the scales or the blocks' d.
DecodedRow decode_row(KvFormat f, DType dtype, const uint8_t* units, int64_t channels, RowScale scale, double* dst) {
  if (f == KvFormat::dtype || f == KvFormat::f16 || f == KvFormat::bf16) {
    const DType storage = f == KvFormat::dtype ? dtype : f == KvFormat::f16 ? DType::f16 : DType::bf16;
    decode_elements(storage, units, channels, dst);
  } else {
    const double* values = code_values(f);
    for (int64_t c = 0; c < channels; ++c) dst[c] = values[get_code(f, units, c)];
    if (info(f).scaled)
      for (int64_t c = 0; c < channels; ++c) dst[c] *= static_cast<double>(scale.data[c * scale.channel_stride]);
    if (info(f).block_scaled) {
      const int64_t block = info(f).unit_channels;
      for (int64_t m = 0; m < channels / block; ++m) {
        const double d = kv_block_d_value(f, units, m * block);
        for (int64_t j = 0; j < block; ++j) dst[m * block + j] *= d;
      }
    }
  }
  DecodedRow r;
  for (int64_t c = 0; c < channels; ++c)
    if (!(dst[c] - dst[c] == 0)) {  // NaN or +-inf
      if (r.non_finite++ == 0) r.first_non_finite = c;
    }
  return r;
}

const uint8_t* view_row(const KvView& v, int64_t i0, int64_t h, int64_t i2) {
  return v.data + (i0 * v.stride[0] + h * v.stride[1] + i2 * v.stride[2]) * kv_unit_bytes(v.format, v.dtype);
}

DecodedRow decode_view_row(const KvView& v, int64_t b, int64_t i0, int64_t h, int64_t i2, int64_t channels,
                           double* dst) {
  return decode_row(v.format, v.dtype, view_row(v, i0, h, i2), channels, row_scale(v.scale, b, h), dst);
}

}  // namespace attncheck
