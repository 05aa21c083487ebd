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

DecodedRow decode_row(KvFormat f, DType dtype, const uint8_t* units, int64_t channels, RowScale scale, double* dst) {
  if (f == KvFormat::dtype)
    decode_elements(dtype, units, channels, dst);
  else
    for (int64_t c = 0; c < channels; ++c) dst[c] = decode_channel(f, dtype, units, c, scale);
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
