// The page pool of a paged call (ABI v3, docs/abi/plugin-abi-v3.md "Paged
// caches"): k and v of a paged Problem (problem.h: logical [batch][kv_heads]
// [kv_len][dim], block_table [batch][max_pages_per_seq]) written as the pool
// the call's views see, dense [num_pages][page_size][kv_heads][dim]:
//   (page p, kv head h, slot s, channel c) at p*stride[0] + h*stride[1] + s*stride[2] + c
//   stride = {page_size*kv_heads*dim, dim, kv_heads*dim, 1}.
// Key j < Lk of sequence b goes to slot j % page_size of page
// block_table[b][j / page_size]; every other element of the pool (dead slots,
// the slots of a last page past Lk, unread pages, the pages behind table
// entries past ceil(Lk / page_size) that no sequence reads) holds the
// problem's page_poison value, so a kernel that reads one reads NaN, an
// infinity or a huge value. Aliased slots are written once per reader with the
// same bits (Problem::inconsistency refuses a problem where they differ).
//
// Example usage (call_layout.cpp):
//   l.k_bytes = paged_pool_bytes(p, p.shape.head_dim); std::copy(st, st + 4, l.k_stride);
//   encode_paged_pool(p, p.k, p.shape.head_dim, l.k_stride, l.k_bytes, base + l.k);
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "problem/problem.h"

namespace attncheck::zones {

// The dense pool's strides for rows of `cols` channels.
inline std::array<int64_t, 4> paged_strides(const Problem& p, int64_t cols) {
  const int64_t kvh = p.shape.kv_head_count();
  return {p.page_size * kvh * cols, cols, kvh * cols, 1};
}

// Bytes of the pool for rows of `cols` channels.
std::size_t paged_pool_bytes(const Problem& p, int64_t cols);

// Writes k (cols = head_dim) or v (cols = value_dim) as the pool at dst. Table
// entries outside the pool are skipped (Problem::inconsistency refuses them;
// the callers never lay out an inconsistent paged problem).
void encode_paged_pool(const Problem& p, const std::vector<double>& src, int64_t cols, const int64_t* stride,
                       std::size_t span_bytes, uint8_t* dst);

}  // namespace attncheck::zones
