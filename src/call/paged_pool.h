// The page pool of a paged call (ABI v3, docs/abi/plugin-abi-v3.md "Paged
// caches"): k and v of a paged Problem (problem.h: logical [batch][kv_heads]
// [kv_len][dim], block_table [batch][max_pages_per_seq]) written as the pool
// the call's views see:
//   (page p, kv head h, slot s, channel c) at p*stride[0] + h*stride[1] + s*stride[2] + c.
// The view's TensorLayout (Problem::layouts.k / .v, STRIDES) orders the axes
// (page, slot, kv head) outermost first, its gaps after each step: the default
// (dense BHSD) is the spec's dense NHD [num_pages][page_size][kv_heads][dim],
//   stride = {page_size*kv_heads*dim, dim, kv_heads*dim, 1};
// order {batch, row, head} read so is FlashInfer's HND [num_pages][kv_heads][page_size][dim].
// Key j < Lk of sequence b goes to slot j % page_size of page
// block_table[b][j / page_size]; every other element of the span (gaps, dead slots,
// the slots of a last page past Lk, unread pages, the pages behind table
// entries past ceil(Lk / page_size) that no sequence reads) holds the
// problem's page_poison value, so a kernel that reads one reads NaN, an
// infinity or a huge value. Aliased slots are written once per reader with the
// same bits (Problem::inconsistency refuses a problem where they differ).
//
// Example usage (call_layout.cpp):
//   l.k_bytes = paged_pool_bytes(p, p.layouts.k, p.shape.head_dim); std::copy(st, st + 4, l.k_stride);
//   encode_paged_pool(p, p.k, p.shape.head_dim, l.k_stride, l.k_bytes, base + l.k);
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "problem/problem.h"

namespace attncheck::zones {

// The pool's extents as its TensorLayout reads them: {pages, slots, kv heads, cols}.
inline std::array<int64_t, 4> paged_extents(const Problem& p, int64_t cols) {
  return {p.num_pages, p.page_size, p.shape.kv_head_count(), cols};
}

// The pool's view strides (page, kv head, slot, channel) for rows of `cols`
// channels laid out by `tl` over (page, slot, kv head).
inline std::array<int64_t, 4> paged_strides(const Problem& p, const TensorLayout& tl, int64_t cols) {
  const std::array<int64_t, 4> st = tl.strides(paged_extents(p, cols));
  return {st[0], st[2], st[1], 1};
}

// Bytes of the pool's span (gaps included) for rows of `cols` channels.
std::size_t paged_pool_bytes(const Problem& p, const TensorLayout& tl, int64_t cols);

// Writes k (cols = head_dim) or v (cols = value_dim) as the pool at dst. Table
// entries outside the pool are skipped (Problem::inconsistency refuses them;
// the callers never lay out an inconsistent paged problem).
void encode_paged_pool(const Problem& p, const std::vector<double>& src, int64_t cols, const int64_t* stride,
                       std::size_t span_bytes, uint8_t* dst);

}  // namespace attncheck::zones
