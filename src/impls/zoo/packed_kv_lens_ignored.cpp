// Zoo (ABI v3 PACKED): with packed keys (cu_seqlens_k), each sequence attends
// every key of its slot, cu_seqlens_k[b] .. cu_seqlens_k[b+1]-1, and never
// reads kv_lens: a varlen kernel that takes seqused_k for its paged path only
// (FlashAttention-3's seqused_k and vLLM's varlen path are separate
// arguments; dropping one is a recurring port bug). Padded calls are right.
// Caught by slack_inert_and_untouched (the slot's padding keys, NaN or huge,
// change the result), packed_equals_padded (the padded twin honours kv_lens)
// and empty_sequences (a sequence with kv_lens 0 in a non-empty slot sees keys).
#include "impls/kernels.h"
#include "impls/zoo/packed_members.h"

namespace attncheck {

int packed_kv_lens_ignored_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  if (!call || !call->cu_seqlens_k) return reference_forward_v3(call, err, err_len);
  attncheck_call_v3 c = *call;
  c.v2.kv_lens = nullptr;  // the fault: Lk is the slot's length
  return reference_forward_v3(&c, err, err_len);
}

}  // namespace attncheck
