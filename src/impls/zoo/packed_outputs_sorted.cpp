// Zoo (ABI v3 PACKED): a varlen kernel that schedules its sequences sorted by
// length, the longest query slot first (stable), to balance its work, as
// FlashAttention-3's varlen scheduler sorts batches and calls a sequence's
// sorted place its "virtual batch index" (Dao-AILab/flash-attention#1823,
// whose maps from virtual to real index every later stage must read). Its
// epilogue takes the output offset from the virtual index: the out rows of
// the sequence at sorted place t are written from the packed row where slot t
// would start were the slots in sorted order (the prefix sums of the sorted
// slot lengths), never put back in the caller's order; the lse is written
// by the real index. The class is old: sorted for speed, not unsorted on the
// way out (mead-ml/mead-baseline#677, huggingface/torchMoji#25).
// Every write stays inside rows 0 .. cu_seqlens_q[batch]-1 (the sorted slots
// tile the same rows); the rows the sequences own that no sorted slot covers
// keep what the caller left there. Right for padded q, and for a batch
// already in that order (the longest first, ties kept). Caught by
// sequence_order (the reordered batch is sorted otherwise, or the drawn one
// was not), and by packed_equals_padded where the drawn batch is not sorted.
// A sorted slot that covers another sequence's padding rows (q_lens shorter
// than the slots) is an out-of-bounds write, as the real kernel's would be.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "impls/kernels.h"
#include "impls/zoo/packed_members.h"

namespace attncheck {

int packed_outputs_sorted_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  if (!call || !call->cu_seqlens_q) return reference_forward_v3(call, err, err_len);
  const attncheck_call_v2& c = call->v2;
  const int32_t* cu = call->cu_seqlens_q;
  const int64_t batch = c.batch;
  std::vector<int64_t> order(static_cast<std::size_t>(batch > 0 ? batch : 0));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return cu[x + 1] - cu[x] > cu[y + 1] - cu[y]; });
  // The live out elements, (row, head) value_dim wide: row r of the packed buffer.
  const int64_t e = c.dtype == ATTNCHECK_F64 ? 8 : c.dtype == ATTNCHECK_F32 ? 4 : 2;
  const int64_t rows = batch > 0 ? cu[batch] : 0, width = c.value_dim * e;
  auto* out = static_cast<uint8_t*>(c.out.data);
  auto element = [&](int64_t r, int64_t h) { return out + (h * c.out.stride[1] + r * c.out.stride[2]) * e; };
  // What the caller left in the buffer, put back where the faulty epilogue never writes.
  std::vector<uint8_t> before(static_cast<std::size_t>(rows * c.heads * width));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < c.heads; ++h)
      std::memcpy(before.data() + (r * c.heads + h) * width, element(r, h), static_cast<std::size_t>(width));
  const int rc = reference_forward_v3(call, err, err_len);
  if (rc != ATTNCHECK_OK || rows == 0) return rc;
  std::vector<uint8_t> right(before.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < c.heads; ++h) {
      std::memcpy(right.data() + (r * c.heads + h) * width, element(r, h), static_cast<std::size_t>(width));
      std::memcpy(element(r, h), before.data() + (r * c.heads + h) * width, static_cast<std::size_t>(width));
    }
  int64_t start = 0;  // where the sorted place's slot starts
  for (int64_t b : order) {
    const int64_t lq = c.q_lens ? c.q_lens[b] : cu[b + 1] - cu[b];
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t h = 0; h < c.heads; ++h)
        std::memcpy(element(start + i, h), right.data() + ((cu[b] + i) * c.heads + h) * width,
                    static_cast<std::size_t>(width));
    start += cu[b + 1] - cu[b];
  }
  return rc;
}

}  // namespace attncheck
