// Zoo (ABI v3 PAGED): a page's valid slots are kept once per page, in a
// per-page length table that every sequence reading the page writes, in batch
// order, the last write winning: all page_size slots when that sequence reads
// past the page, else its Lk % page_size. Every reader of an aliased page then
// reads zeros past the last writer's count (prefix caching and beam-search
// forks share pages, vLLM's tests alias them at random): a kernel that keeps
// per-page metadata assuming distinct pages. Pages read once are right, and
// so is every unpaged call. Caught by page_alias_equals_copy (a fresh copy has
// its own count) and matches_oracle.
#include <algorithm>
#include <cstring>
#include <vector>

#include "impls/kernels.h"
#include "impls/paged_gather.h"
#include "impls/zoo/paged_members.h"

namespace attncheck {

int paged_alias_length_overwritten_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  if (!call || !call->block_table || !detail::paging_defect(*call).empty()) return reference_forward_v3(call, err, err_len);
  detail::PagedCopies copies;
  const attncheck_call_v3 c = detail::gather_paged(*call, copies);
  const attncheck_call_v2& v = call->v2;
  const int64_t ps = call->page_size;
  const std::size_t e = detail::paged_element_bytes(v.dtype);
  auto length_of = [&](int64_t b) { return v.kv_lens ? int64_t{v.kv_lens[b]} : v.kv_len; };
  auto page_of = [&](int64_t b, int64_t j) { return static_cast<std::size_t>(call->block_table[b * call->max_pages_per_seq + j / ps]); };
  // The fault: one length per page, each reader's count written over the last.
  std::vector<int64_t> valid(static_cast<std::size_t>(call->num_pages), ps);
  for (int64_t b = 0; b < v.batch; ++b)
    for (int64_t entry = 0; entry < (length_of(b) + ps - 1) / ps; ++entry)
      valid[page_of(b, entry * ps)] = std::min(ps, length_of(b) - entry * ps);
  for (int64_t b = 0; b < v.batch; ++b) {
    for (int64_t j = 0; j < length_of(b); ++j) {
      if (j % ps < valid[page_of(b, j)]) continue;
      for (int64_t h = 0; h < v.kv_heads; ++h) {  // past the page's count: zeros
        std::memset(copies.k.data() + static_cast<std::size_t>(((b * v.kv_heads + h) * v.kv_len + j) * v.head_dim) * e, 0,
                    static_cast<std::size_t>(v.head_dim) * e);
        std::memset(copies.v.data() + static_cast<std::size_t>(((b * v.kv_heads + h) * v.kv_len + j) * v.value_dim) * e, 0,
                    static_cast<std::size_t>(v.value_dim) * e);
      }
    }
  }
  return reference_forward_v3(&c, err, err_len);
}

}  // namespace attncheck
