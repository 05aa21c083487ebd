#include "call/paged_pool.h"

#include <cstring>

#include "problem/dtype.h"

namespace attncheck::zones {

std::size_t paged_pool_bytes(const Problem& p, const TensorLayout& tl, int64_t cols) {
  return dtype_bytes(p.dtype) * static_cast<std::size_t>(tl.span(paged_extents(p, cols)));
}

void encode_paged_pool(const Problem& p, const std::vector<double>& src, int64_t cols, const int64_t* stride,
                       std::size_t span_bytes, uint8_t* dst) {
  const DType t = p.dtype;
  const std::size_t b = dtype_bytes(t);
  uint8_t poison[8];
  encode_element(t, page_poison_value(t, p.page_poison), poison);
  for (std::size_t at = 0; at + b <= span_bytes; at += b) std::memcpy(dst + at, poison, b);
  const Shape& s = p.shape;
  if (static_cast<int64_t>(p.block_table.size()) != s.batch * p.max_pages_per_seq || p.page_size < 1) return;
  const int64_t kvh = s.kv_head_count();
  for (int64_t x = 0; x < s.batch; ++x)
    for (int64_t j = 0; j < p.kv_len_of(x) && j < p.max_pages_per_seq * p.page_size; ++j) {
      const int64_t page = p.page_of(x, j), slot = j % p.page_size;
      if (page < 0 || page >= p.num_pages) continue;
      for (int64_t h = 0; h < kvh; ++h)
        encode_elements(t, src.data() + ((x * kvh + h) * s.kv_len + j) * cols, cols,
                        dst + b * static_cast<std::size_t>(page * stride[0] + h * stride[1] + slot * stride[2]));
    }
}

}  // namespace attncheck::zones
