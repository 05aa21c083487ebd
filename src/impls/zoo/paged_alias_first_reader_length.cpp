// Zoo (ABI v3 PAGED): a page's valid slots are counted once, from the first
// sequence (in batch order) that reads it: all page_size slots when that
// sequence reads past the page, else its Lk % page_size. A later sequence
// that reads the same page further (prefix caching shares a partial last
// page; vLLM's tests alias pages at random) reads zeros in the slots past
// that count: a kernel that caches per-page metadata assuming distinct pages.
// Pages read once are right, and so is every unpaged call. Caught by
// aliases_equal_copies (a fresh copy has its own count) and matches_oracle.
#include <algorithm>
#include <cstring>
#include <vector>

#include "impls/kernels.h"
#include "impls/paged_gather.h"
#include "impls/zoo/paged_members.h"

namespace attncheck {

int paged_alias_first_reader_length_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  if (!call || !call->block_table || !detail::paging_defect(*call).empty()) return reference_forward_v3(call, err, err_len);
  detail::PagedCopies copies;
  const attncheck_call_v3 c = detail::gather_paged(*call, copies);
  const attncheck_call_v2& v = call->v2;
  const int64_t ps = call->page_size;
  const std::size_t e = detail::paged_element_bytes(v.dtype);
  std::vector<int64_t> valid(static_cast<std::size_t>(call->num_pages), -1);  // slots counted by a page's first reader
  for (int64_t b = 0; b < v.batch; ++b) {
    const int64_t lk = v.kv_lens ? v.kv_lens[b] : v.kv_len;
    for (int64_t j = 0; j < lk; ++j) {
      const auto page = static_cast<std::size_t>(call->block_table[b * call->max_pages_per_seq + j / ps]);
      if (valid[page] < 0) valid[page] = std::min(ps, lk - j / ps * ps);  // the fault: counted once
      if (j % ps < valid[page]) continue;
      for (int64_t h = 0; h < v.kv_heads; ++h) {  // the later reader sees zeros there
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
