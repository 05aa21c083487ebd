// Stored K and V to their real values, exactly (docs/kv-formats.md): the value of a channel is
// its code's value (kv_codes.h) times its scale (FP8, INT8, INT4) or its block's d (Q8_0, Q4_0),
// and every such product is exact in double (an 8-bit code times a binary32 scale needs at most
// 32 significant bits, and stays far inside double's exponent range). The oracle and the
// references read K and V through here.
//
// A code that is NaN or infinite (or a NaN d, or a scale that is not finite) decodes to NaN or
// +-inf and is counted in DecodedRow: the checker writes such codes only into dead bytes, so a
// caller that meets one in a live row has read the wrong bytes, and says so.
#pragma once

#include <cstdint>

#include "problem/dtype.h"
#include "problem/kv_format.h"
#include "problem/kv_scale.h"

namespace attncheck {

// One row's scales once its (batch entry, kv head) is known: channel c's is data[c * channel_stride].
struct RowScale {
  const float* data = nullptr;  // null for unscaled formats
  int64_t channel_stride = 0;
};
RowScale row_scale(const KvScale& s, int64_t b, int64_t h);

// How many of a row's decoded channels are NaN or infinite, and the first of them (-1: none).
struct DecodedRow {
  int64_t non_finite = 0;
  int64_t first_non_finite = -1;
  bool finite() const { return non_finite == 0; }
};

// Channel c of the row whose units start at `units` (dtype: only for KvFormat::dtype, whose
// units are the dtype's elements; scale: only for the scaled formats).
double decode_channel(KvFormat f, DType dtype, const uint8_t* units, int64_t c, RowScale scale);
// Channels [0, channels) of that row into dst.
DecodedRow decode_row(KvFormat f, DType dtype, const uint8_t* units, int64_t channels, RowScale scale, double* dst);

// A view of K or V as the call passes it: axes (batch entry or page, kv head, row or page slot,
// unit), strides in units of the format (elements for KvFormat::dtype), stride[3] = 1.
struct KvView {
  const uint8_t* data = nullptr;
  KvFormat format = KvFormat::dtype;
  DType dtype = DType::f32;  // the call's dtype
  int64_t stride[4]{};
  KvScale scale;  // the scaled formats' attncheck_scale
};
// The first byte of the row at (i0, h, i2).
const uint8_t* view_row(const KvView& v, int64_t i0, int64_t h, int64_t i2);
// That row's channels [0, channels) decoded with the scales of batch entry b, the sequence that
// reads it (padded or packed: b = i0 or the packed row's sequence; paged: i0 is the page).
DecodedRow decode_view_row(const KvView& v, int64_t b, int64_t i0, int64_t h, int64_t i2, int64_t channels,
                           double* dst);

}  // namespace attncheck
