// Zoo (ABI v3 PAGED): a sequence shorter than one page (0 < Lk < page_size)
// comes back as if it had no key: out = 0 and lse = -inf on its live rows, a
// real class of paged-kernel bug (flashinfer#725: a sequence shorter than one
// page returned zeros; the kernel sized its page loop by whole pages).
// Unpaged calls and sequences of a page or more are right. Caught by
// paged_equals_contiguous (the padded twin is right) and page_size_independence
// (with one key a page the sequence is no longer short), and matches_oracle.
#include <cstring>
#include <limits>

#include "impls/kernels.h"
#include "impls/zoo/paged_members.h"

namespace attncheck {

int paged_short_sequence_zeros_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  const int rc = reference_forward_v3(call, err, err_len);
  if (rc != ATTNCHECK_OK || !call->block_table) return rc;
  const attncheck_call_v2& c = call->v2;
  const std::size_t e = c.dtype == ATTNCHECK_F64 ? 8 : c.dtype == ATTNCHECK_F32 ? 4 : 2;
  for (int64_t b = 0; b < c.batch; ++b) {
    const int64_t lk = c.kv_lens ? c.kv_lens[b] : c.kv_len;
    if (lk == 0 || lk >= call->page_size) continue;
    const int64_t first = call->cu_seqlens_q ? call->cu_seqlens_q[b] : 0;
    const int64_t lq = c.q_lens ? c.q_lens[b] : call->cu_seqlens_q ? call->cu_seqlens_q[b + 1] - first : c.q_len;
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < lq; ++i) {
        // out row (b, h, i): the fault writes zeros (all-zero bits in every dtype) and lse -inf.
        auto* row = static_cast<uint8_t*>(c.out.data) +
                    (b * c.out.stride[0] + h * c.out.stride[1] + (first + i) * c.out.stride[2]) * e;
        std::memset(row, 0, static_cast<std::size_t>(c.value_dim) * e);
        if (c.lse) c.lse[(b * c.heads + h) * c.q_len + i] = -std::numeric_limits<float>::infinity();
      }
  }
  return rc;
}

}  // namespace attncheck
