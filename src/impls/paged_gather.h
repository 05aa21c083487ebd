// The built-ins' reading of a paged call (ABI v3, "Paged caches"): each
// sequence's keys gathered through block_table into dense padded copies of k
// and v, [batch][kv_heads][kv_len][dim], and the call rewritten to read
// those, its paging fields neutral. Only keys j < Lk are copied (entries
// past ceil(Lk / page_size) and every other pool byte are never read); the
// copies' keys past Lk are zeros, which no kernel reads (a row's keys end at
// Lk). Elements are copied as bytes of the dtype, so every dtype (the
// widened f16 and bf16 too) computes exactly as the same keys padded.
//
// The gather is shared by reference, naive and online: they check each
// other's arithmetic, not this indexing, which the paged laws check on every
// zoo member against the same keys unpaged (paged_equals_contiguous).
//
// Example usage (dispatch_v3):
//   PagedCopies copies;
//   if (call->block_table) { defect = paging_defect(*call); ...; unpaged = gather_paged(*call, copies); }
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "attncheck/plugin_v3.h"

namespace attncheck::detail {

// What a paged v3 call must hold (docs/abi/plugin-abi-v3.md, "Paged
// caches"); "" when usable.
inline std::string paging_defect(const attncheck_call_v3& c) {
  const attncheck_call_v2& v = c.v2;
  if (!c.block_table)
    return c.max_pages_per_seq || c.num_pages || c.page_size ? "the paged sizes are not 0 without a block_table" : "";
  if (c.page_size < 1 || c.num_pages < 1 || c.max_pages_per_seq < 1)
    return "page_size, num_pages and max_pages_per_seq must be >= 1 with a block_table";
  if (c.cu_seqlens_k) return "cu_seqlens_k is given with a block_table";
  if (v.batch <= 0 || v.kv_heads <= 0 || v.kv_len <= 0 || v.head_dim <= 0 || v.value_dim <= 0)
    return "every extent must be positive";
  if (v.kv_len > c.max_pages_per_seq * c.page_size) return "kv_len is past max_pages_per_seq * page_size";
  for (const attncheck_view* view : {&v.k, &v.v})
    for (int64_t s : view->stride)
      if (s < 0) return "a paged view has a negative stride";
  for (int64_t b = 0; b < v.batch; ++b) {
    const int64_t lk = v.kv_lens ? v.kv_lens[b] : v.kv_len;
    if (lk < 0 || lk > v.kv_len) return "kv_lens[" + std::to_string(b) + "] is outside [0, kv_len]";
    for (int64_t e = 0; e < (lk + c.page_size - 1) / c.page_size; ++e) {
      const int32_t page = c.block_table[b * c.max_pages_per_seq + e];
      if (page < 0 || page >= c.num_pages)
        return "block_table[" + std::to_string(b) + "][" + std::to_string(e) + "] is not a page of the pool";
    }
  }
  return "";
}

// Dense copies of the gathered keys and values.
struct PagedCopies {
  std::vector<uint8_t> k, v;
};

inline std::size_t paged_element_bytes(attncheck_dtype t) {
  switch (static_cast<int>(t)) {
    case ATTNCHECK_F64: return 8;
    case ATTNCHECK_F16: case ATTNCHECK_BF16: return 2;
    default: return 4;
  }
}

// The call with k and v gathered into `copies` (dense BHSD) and its paging
// fields neutral. The call must have passed paging_defect.
inline attncheck_call_v3 gather_paged(const attncheck_call_v3& c, PagedCopies& copies) {
  attncheck_call_v3 r = c;
  attncheck_call_v2& v = r.v2;
  const std::size_t e = paged_element_bytes(v.dtype);
  const int64_t ps = c.page_size;
  auto gather = [&](const attncheck_view& pool, int64_t cols, std::vector<uint8_t>& into, attncheck_view& out) {
    into.assign(static_cast<std::size_t>(v.batch * v.kv_heads * v.kv_len * cols) * e, 0);
    const auto* base = static_cast<const uint8_t*>(pool.data);
    for (int64_t b = 0; b < v.batch; ++b) {
      const int64_t lk = v.kv_lens ? v.kv_lens[b] : v.kv_len;
      for (int64_t h = 0; h < v.kv_heads; ++h)
        for (int64_t j = 0; j < lk; ++j) {
          // Key j: slot j % page_size of page block_table[b][j / page_size].
          const int64_t page = c.block_table[b * c.max_pages_per_seq + j / ps];
          const uint8_t* src = base + (page * pool.stride[0] + h * pool.stride[1] + (j % ps) * pool.stride[2]) * e;
          std::memcpy(into.data() + static_cast<std::size_t>(((b * v.kv_heads + h) * v.kv_len + j) * cols) * e, src,
                      static_cast<std::size_t>(cols) * e);
        }
    }
    out.data = into.data();
    out.stride[3] = 1, out.stride[2] = cols, out.stride[1] = v.kv_len * cols, out.stride[0] = v.kv_heads * v.kv_len * cols;
  };
  gather(c.v2.k, v.head_dim, copies.k, v.k);
  gather(c.v2.v, v.value_dim, copies.v, v.v);
  r.block_table = nullptr;
  r.max_pages_per_seq = r.num_pages = r.page_size = 0;
  return r;
}

}  // namespace attncheck::detail
