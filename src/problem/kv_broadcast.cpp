#include "problem/kv_broadcast.h"

#include <cstring>

namespace attncheck {

namespace {

// The element (b, h, j, c) of a [batch][kv_heads][kv_len][cols] tensor.
int64_t kv_element_at(const Shape& s, int64_t b, int64_t h, int64_t j, int64_t c, int64_t cols) {
  return ((b * s.kv_head_count() + h) * s.kv_len + j) * cols + c;
}

// The slice that a broadcast axis repeats: batch entry src_b (or each b), kv head 0 (or each h).
int64_t kv_source_of(const Shape& s, int64_t how, int64_t src_b, int64_t b, int64_t h, int64_t j, int64_t c,
                     int64_t cols) {
  return kv_element_at(s, (how & kKvBroadcastBatch) ? src_b : b, (how & kKvBroadcastHeads) ? 0 : h, j, c, cols);
}

}  // namespace

void expand_kv(Problem& p, bool is_k, int64_t how) {
  const Shape& s = p.shape;
  int64_t src_b = 0;
  for (int64_t b = 1; b < s.batch; ++b)
    if (p.kv_len_of(b) > p.kv_len_of(src_b)) src_b = b;
  std::vector<double>& t = is_k ? p.k : p.v;
  const int64_t cols = is_k ? s.head_dim : s.value_dim;
  const std::vector<double> from = t;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.kv_head_count(); ++h)
      for (int64_t j = 0; j < s.kv_len; ++j)
        for (int64_t c = 0; c < cols; ++c)
          t[kv_element_at(s, b, h, j, c, cols)] = from[kv_source_of(s, how, src_b, b, h, j, c, cols)];
  (is_k ? p.k_broadcast : p.v_broadcast) = how;
}

Problem materialized(const Problem& p) {
  Problem r = p;
  r.k_broadcast = r.v_broadcast = 0;
  return r;
}

std::string kv_broadcast_inconsistency(const Problem& p) {
  if (!p.kv_broadcast()) return "";
  for (const int64_t how : {p.k_broadcast, p.v_broadcast})
    if (how < 0 || how > (kKvBroadcastBatch | kKvBroadcastHeads))
      return "k_broadcast and v_broadcast must be 0..3 (1: the batch axis, 2: the kv-head axis)";
  if (p.packed_k()) return "k or v broadcast with packed keys (padded keys only)";
  if (p.paged()) return "k or v broadcast with paged keys (never with paging)";
  if (p.kv_formatted()) return "k or v broadcast with a stored format (not laid out yet)";
  if (p.v_view_of_k) return "k or v broadcast with v a view of k";
  if (p.is_backward()) return "k or v broadcast in a backward problem (not laid out yet)";
  const Shape& s = p.shape;
  for (const bool is_k : {true, false}) {
    const int64_t how = is_k ? p.k_broadcast : p.v_broadcast;
    if (how == 0) continue;
    const std::vector<double>& t = is_k ? p.k : p.v;
    const int64_t cols = is_k ? s.head_dim : s.value_dim;
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t h = 0; h < s.kv_head_count(); ++h)
        for (int64_t j = 0; j < s.kv_len; ++j)
          for (int64_t c = 0; c < cols; ++c) {
            // Every element equals batch entry 0's (kv head 0's) on a broadcast axis.
            const double x = t[kv_element_at(s, b, h, j, c, cols)];
            const double y = t[kv_source_of(s, how, 0, b, h, j, c, cols)];
            if (std::memcmp(&x, &y, sizeof x) != 0)
              return std::string(is_k ? "k" : "v") + "_broadcast " + std::to_string(how) + " but " +
                     (is_k ? "k" : "v") + "[" + std::to_string(b) + "][" + std::to_string(h) + "][" +
                     std::to_string(j) + "][" + std::to_string(c) + "] differs from the slice it repeats";
          }
  }
  return "";
}

}  // namespace attncheck
