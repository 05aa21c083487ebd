// Zoo (ABI v3 PACKED): a varlen kernel without the guard for an empty key
// range. A sequence with query rows but no keys (Lk = 0: an empty key slot,
// or kv_lens 0) runs no key block, and its epilogue divides the untouched
// accumulator (0) by the untouched denominator (0): out = 0/0 = NaN, lse =
// log(0) = -inf (right by accident). FlashAttention's varlen forward writes 0
// and -inf for such rows only because an explicit early exit does (the case
// that FlashAttention#1537 and #2568 were about; the spec's empty_sequences).
// With sinks the denominator holds the sink's term and the row is right; so
// are padded calls (their kernel is another) and every sequence with a key.
// Caught by empty_sequences (a keyless sequence's out must be exactly 0) and
// packed_equals_padded (the padded twin is right); matches_oracle sees it only
// on a packed case with a keyless sequence, which it seldom draws.
#include <cstdint>
#include <cstring>
#include <limits>

#include "impls/kernels.h"
#include "impls/zoo/packed_members.h"

namespace attncheck {

namespace {

// A quiet NaN in the call's dtype at `at` (f64, f32, binary16 or bfloat16).
void write_nan(void* at, attncheck_dtype dtype) {
  switch (dtype) {
    case ATTNCHECK_F64: {
      const double x = std::numeric_limits<double>::quiet_NaN();
      std::memcpy(at, &x, sizeof x);
      return;
    }
    case ATTNCHECK_F32: {
      const float x = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(at, &x, sizeof x);
      return;
    }
    case ATTNCHECK_F16: {
      const uint16_t bits = 0x7E00;
      std::memcpy(at, &bits, sizeof bits);
      return;
    }
    case ATTNCHECK_BF16: {
      const uint16_t bits = 0x7FC0;
      std::memcpy(at, &bits, sizeof bits);
      return;
    }
  }
}

}  // namespace

int packed_keyless_rows_nan_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  const int rc = reference_forward_v3(call, err, err_len);
  if (rc != ATTNCHECK_OK || (!call->cu_seqlens_q && !call->cu_seqlens_k)) return rc;
  const attncheck_call_v2& c = call->v2;
  if (c.sinks) return rc;
  const std::size_t e = c.dtype == ATTNCHECK_F64 ? 8 : c.dtype == ATTNCHECK_F32 ? 4 : 2;
  for (int64_t b = 0; b < c.batch; ++b) {
    const int64_t lk = c.kv_lens           ? c.kv_lens[b]
                       : call->cu_seqlens_k ? call->cu_seqlens_k[b + 1] - call->cu_seqlens_k[b]
                                            : c.kv_len;
    if (lk != 0) continue;
    // Query rows of b: rows first .. first+lq-1 of its slot (packed: of the buffer, stride[0] = 0).
    const int64_t first = call->cu_seqlens_q ? call->cu_seqlens_q[b] : 0;
    const int64_t lq = c.q_lens ? c.q_lens[b] : call->cu_seqlens_q ? call->cu_seqlens_q[b + 1] - first : c.q_len;
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t ch = 0; ch < c.value_dim; ++ch) {
          const int64_t at = b * c.out.stride[0] + h * c.out.stride[1] + (first + i) * c.out.stride[2] +
                             ch * c.out.stride[3];
          write_nan(static_cast<uint8_t*>(c.out.data) + at * static_cast<int64_t>(e), c.dtype);
        }
  }
  return rc;
}

}  // namespace attncheck
