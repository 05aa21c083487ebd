// Zoo (ABI v3 ALIBI_BATCH): the slopes of batch entry 0 serve every entry: the
// kernel takes the (batch, heads) slopes but indexes them by head alone, as a
// kernel written for version 2's [heads] does when the batch stride is not
// passed down to it (FlashAttention-2 reads alibi_slopes_batch_stride,
// csrc/flash_attn/flash_api.cpp:349-361; a wrapper that forgets it reads
// row 0 for all). The spec names the fault ("ALIBI_BATCH and uses one batch
// entry's slopes for all"). Right whenever every row equals row 0 (and on
// every call with version 2's slopes). Caught by alibi_batch_matches_alone on
// every case whose rows differ where the entry's logits see it.
#include "impls/kernels.h"
#include "impls/zoo/alibi_batch_members.h"

namespace attncheck {

int alibi_batch_first_row_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  if (!call || call->alibi_batch_stride == 0) return reference_forward_v3(call, err, err_len);
  attncheck_call_v3 c = *call;
  c.alibi_batch_stride = 0;  // the fault: slope h of every entry is alibi_slopes[h], row 0's
  return reference_forward_v3(&c, err, err_len);
}

}  // namespace attncheck
