// Zoo (ABI v3 PAGED): a sequence's pages counted as Lk / page_size + 1 with
// its last page's length Lk % page_size read as a full page when it is 0
// (FlashInfer's CSR form has last_page_len >= 1, docs/abi/plugin-abi-v3.md
// "Choices, and why": a converter that forgets that): when Lk is a multiple
// of page_size, an empty sequence included, the kernel reads one table entry
// more, the first unread one, and attends the page_size slots of the page it
// names as keys Lk ... Lk + page_size - 1 (at most kv_len and the table's
// row; block_table [batch][max_pages_per_seq]). The class of paged kernels
// that load the next table entry and let it in. Unpaged calls, and sequences
// whose Lk is not a multiple of page_size, are right. Caught by
// unread_table_entries_inert (the entry renamed to another sequence's page
// changes the result).
#include <algorithm>
#include <vector>

#include "impls/kernels.h"
#include "impls/zoo/paged_members.h"

namespace attncheck {

int paged_extra_page_on_boundary_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  if (!call || !call->block_table || !call->v2.kv_lens || call->page_size < 1)
    return reference_forward_v3(call, err, err_len);
  attncheck_call_v3 c = *call;
  const int64_t ps = call->page_size;
  const int64_t limit = std::min<int64_t>(c.v2.kv_len, call->max_pages_per_seq * ps);
  std::vector<int32_t> read(static_cast<std::size_t>(c.v2.batch));
  for (int64_t b = 0; b < c.v2.batch; ++b) {
    const int64_t lk = call->v2.kv_lens[b];
    const int64_t keys = lk % ps == 0 ? lk + ps : lk;  // the fault: a last page of length 0 read as full
    read[static_cast<std::size_t>(b)] = static_cast<int32_t>(std::max(lk, std::min(limit, keys)));
  }
  c.v2.kv_lens = read.data();
  return reference_forward_v3(&c, err, err_len);
}

}  // namespace attncheck
