#include "problem/paging.h"

#include <algorithm>

namespace attncheck {

Problem unpaged(const Problem& p) {
  Problem r = p;
  r.block_table.clear();
  r.max_pages_per_seq = r.num_pages = r.page_size = r.page_poison = 0;
  return r;
}

Problem paged_plainly(const Problem& p, int64_t page_size) {
  Problem r = unpaged(p);
  r.page_size = page_size;
  r.page_poison = p.page_poison;
  r.max_pages_per_seq = (p.shape.kv_len + page_size - 1) / page_size;
  int32_t next = 0;
  for (int64_t b = 0; b < p.shape.batch; ++b) {
    const int64_t used = (p.kv_len_of(b) + page_size - 1) / page_size;
    for (int64_t e = 0; e < r.max_pages_per_seq; ++e) r.block_table.push_back(e < used ? next++ : 0);
  }
  r.num_pages = std::max<int64_t>(1, next);
  return r;
}

Problem pages_renamed(const Problem& p, const std::vector<int32_t>& perm) {
  Problem r = p;
  for (int32_t& e : r.block_table) e = perm[static_cast<std::size_t>(e)];
  return r;
}

std::vector<bool> live_slots(const Problem& p) {
  std::vector<bool> live(static_cast<std::size_t>(p.num_pages * p.page_size), false);
  for (int64_t b = 0; b < p.shape.batch; ++b)
    for (int64_t j = 0; j < p.kv_len_of(b); ++j)
      live[static_cast<std::size_t>(p.page_of(b, j) * p.page_size + j % p.page_size)] = true;
  return live;
}

std::vector<AliasedKey> aliased_keys(const Problem& p) {
  const int64_t kv_len = p.shape.kv_len;
  std::vector<int64_t> owner(static_cast<std::size_t>(p.num_pages * p.page_size), -1);  // b * kv_len + j
  std::vector<AliasedKey> aliased;
  for (int64_t b = 0; b < p.shape.batch; ++b)
    for (int64_t j = 0; j < p.kv_len_of(b); ++j) {
      int64_t& first = owner[static_cast<std::size_t>(p.page_of(b, j) * p.page_size + j % p.page_size)];
      if (first < 0) first = b * kv_len + j;
      else aliased.push_back({b, j, first / kv_len, first % kv_len});
    }
  return aliased;
}

}  // namespace attncheck
