// What two packed members' faults write (packed_keyless_rows_nan,
// packed_empty_split_nan): sequence b's live out rows as NaN, 0/0 of an
// epilogue that divides an untouched accumulator by an untouched denominator.
#include <cstdint>
#include <cstring>
#include <limits>

#include "impls/zoo/packed_members.h"

namespace attncheck {

namespace {

// A quiet NaN in the call's dtype at `at` (f64, f32, binary16 or bfloat16).
void write_quiet_nan(void* at, attncheck_dtype dtype) {
  if (dtype == ATTNCHECK_F64) {
    const double x = std::numeric_limits<double>::quiet_NaN();
    std::memcpy(at, &x, sizeof x);
  } else if (dtype == ATTNCHECK_F32) {
    const float x = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(at, &x, sizeof x);
  } else {
    const uint16_t bits = dtype == ATTNCHECK_F16 ? 0x7E00 : 0x7FC0;
    std::memcpy(at, &bits, sizeof bits);
  }
}

}  // namespace

void write_sequence_out_nan(const attncheck_call_v3& call, int64_t b) {
  const attncheck_call_v2& c = call.v2;
  const int64_t e = c.dtype == ATTNCHECK_F64 ? 8 : c.dtype == ATTNCHECK_F32 ? 4 : 2;
  // Query rows of b: rows first .. first+lq-1 of its slot (packed: of the buffer, stride[0] = 0).
  const int64_t first = call.cu_seqlens_q ? call.cu_seqlens_q[b] : 0;
  const int64_t lq = c.q_lens ? c.q_lens[b] : call.cu_seqlens_q ? call.cu_seqlens_q[b + 1] - first : c.q_len;
  for (int64_t h = 0; h < c.heads; ++h)
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t ch = 0; ch < c.value_dim; ++ch) {
        const int64_t at =
            b * c.out.stride[0] + h * c.out.stride[1] + (first + i) * c.out.stride[2] + ch * c.out.stride[3];
        write_quiet_nan(static_cast<uint8_t*>(c.out.data) + at * e, c.dtype);
      }
}

}  // namespace attncheck
