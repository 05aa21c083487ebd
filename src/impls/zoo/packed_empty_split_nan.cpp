// Zoo (ABI v3 PACKED): a varlen split-KV kernel (FlashDecoding) whose split
// count comes from the bound kv_len (max_seqlen_k), as FlashAttention's
// num_splits heuristic sizes its splits from max_seqlen_k: keys are split in
// partitions of 64, partition s holding keys 64s .. 64s+63 of each sequence,
// for s < ceil(kv_len / 64). A partition that starts past a sequence's keys
// (64s >= Lk) runs no key block, and without the early exit that writes its
// out_accum 0 and lse_accum -inf it normalises its untouched accumulator by
// its untouched sum, 0/0 = NaN; the combine weighs it by exp(-inf - lse) = 0
// and 0 x NaN = NaN: every out row of that sequence is NaN (its lse, a
// log-sum-exp of the partitions' lse, stays right). vllm-project/
// flash-attention#190 pre-initialises softmax_lse_accum and out_accum to -inf
// and 0 "so early-exit splits cannot leak garbage into the combine"; the
// ONNX Runtime review of microsoft/onnxruntime#32102 found that a loose
// max_kv_len bound "can leave almost all selected splits empty".
// Only with packed keys (cu_seqlens_k: the varlen path), and only where there
// are two partitions or more and the sequence has a key (a keyless sequence is
// the combine's all -inf case, handled). Right wherever every sequence's keys
// reach the last partition, so the drawn packed cases (kv_len mostly at most
// 72, the largest slot) mostly pass. Caught by bounds_inert (128 keys or
// more added to kv_len leave an empty partition for every sequence with a
// key), and by packed_equals_padded (its padded twin is right) where a drawn
// case already has one.
#include <cstdint>

#include "impls/kernels.h"
#include "impls/zoo/packed_members.h"

namespace attncheck {

namespace {

constexpr int64_t kSplitKeys = 64;

}  // namespace

int packed_empty_split_nan_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  const int rc = reference_forward_v3(call, err, err_len);
  if (rc != ATTNCHECK_OK || !call->cu_seqlens_k) return rc;
  const attncheck_call_v2& c = call->v2;
  const int64_t splits = (c.kv_len + kSplitKeys - 1) / kSplitKeys;
  if (splits < 2) return rc;
  for (int64_t b = 0; b < c.batch; ++b) {
    const int64_t lk = c.kv_lens ? c.kv_lens[b] : call->cu_seqlens_k[b + 1] - call->cu_seqlens_k[b];
    if (lk == 0 || (lk + kSplitKeys - 1) / kSplitKeys == splits) continue;  // no empty partition
    write_sequence_out_nan(*call, b);
  }
  return rc;
}

}  // namespace attncheck
