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
#include "impls/kernels.h"
#include "impls/zoo/packed_members.h"

namespace attncheck {

int packed_keyless_rows_nan_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  const int rc = reference_forward_v3(call, err, err_len);
  if (rc != ATTNCHECK_OK || (!call->cu_seqlens_q && !call->cu_seqlens_k)) return rc;
  const attncheck_call_v2& c = call->v2;
  if (c.sinks) return rc;
  for (int64_t b = 0; b < c.batch; ++b) {
    const int64_t lk = c.kv_lens           ? c.kv_lens[b]
                       : call->cu_seqlens_k ? call->cu_seqlens_k[b + 1] - call->cu_seqlens_k[b]
                                            : c.kv_len;
    if (lk == 0) write_sequence_out_nan(*call, b);
  }
  return rc;
}

}  // namespace attncheck
