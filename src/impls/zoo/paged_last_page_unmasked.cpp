// Zoo (ABI v3 PAGED): each sequence's last page is read whole: the kernel
// takes a sequence's keys to be its pages times page_size (up to kv_len)
// rather than Lk, so the slots of its last page past Lk (dead slots, or
// another sequence's keys when the page is shared) are attended, and under a
// bottom-right causal rule the rows align to the wrong end. The class of
// paged kernels that load a whole block and forget to mask its tail (vLLM's
// 0x7F fill in unused slots is there to catch them). Unpaged calls, and
// sequences whose Lk is a multiple of page_size or kv_len, are right. Caught
// by dead_page_bytes_inert (the dead slots' poison shows) and
// paged_equals_contiguous (the padded twin attends Lk keys); not by
// unread_table_entries_inert (its last page's entry is read).
#include <algorithm>
#include <vector>

#include "impls/kernels.h"
#include "impls/zoo/paged_members.h"

namespace attncheck {

int paged_last_page_unmasked_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  if (!call || !call->block_table || !call->v2.kv_lens || call->page_size < 1)
    return reference_forward_v3(call, err, err_len);
  attncheck_call_v3 c = *call;
  std::vector<int32_t> whole(static_cast<std::size_t>(c.v2.batch));
  for (int64_t b = 0; b < c.v2.batch; ++b) {
    const int64_t lk = call->v2.kv_lens[b], ps = call->page_size;
    whole[static_cast<std::size_t>(b)] = static_cast<int32_t>(std::min(c.v2.kv_len, (lk + ps - 1) / ps * ps));  // the fault
  }
  c.v2.kv_lens = whole.data();
  return reference_forward_v3(&c, err, err_len);
}

}  // namespace attncheck
