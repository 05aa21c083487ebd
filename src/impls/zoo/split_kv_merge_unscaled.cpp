// Zoo: split-KV decoding merged wrongly. Up to 2,048 keys the kernel is
// correct attention; past that, as FlashDecoding-style kernels do, it splits
// the keys into partitions of 1,024, computes each partition's softmax with its
// own running max m_p, sum l_p = sum_{j in p} exp(s_j - m_p) and output o_p,
// and merges them as sum_p l_p o_p / sum_p l_p: without rescaling each
// partition by exp(m_p - max_p m_p). Where the partitions' maxima differ (any
// ordinary row) the keys of partitions with a low maximum weigh far too much.
// The weights still sum to one and the output stays in the values' hull, so
// only a comparison with attention itself (or a law that moves keys between
// partitions) sees it, and only on rows of more than 2,048 keys: the default
// profile's long rows (src/gen/profiles.cpp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "impls/kernels.h"
#include "impls/typed_call.h"

namespace attncheck {

namespace {

constexpr int64_t kSplitPast = 2048;      // kv_len above which the split-KV path runs
constexpr int64_t kPartitionKeys = 1024;  // keys per partition on that path

template <class T>
void split_kv_attention(const TypedCall<T>& c) {
  const T scale = c.abi_scale();
  const bool split = c.kv_len > kSplitPast;
  const int64_t block = split ? kPartitionKeys : c.kv_len;
  std::vector<T> weight(c.kv_len);  // [kv_len]: the logits, then exp(s_j - m_p)
  std::vector<char> sees(c.kv_len);
  for (int64_t bh = 0; bh < c.heads_total(); ++bh) {
    const T* keys = c.k_head(bh);    // [kv_len][head_dim]
    const T* values = c.v_head(bh);  // [kv_len][value_dim]
    for (int64_t i = 0; i < c.q_len; ++i) {
      const T* q = c.q_head(bh) + i * c.head_dim;  // [head_dim]
      T* out = c.out_head(bh) + i * c.value_dim;    // [value_dim]
      const int64_t causal_end = causal_key_end(c.causal, c.q_len, c.kv_len, i);
      const uint8_t* mask = c.mask_head(bh) ? c.mask_head(bh) + i * c.kv_len : nullptr;  // [kv_len]
      for (int64_t col = 0; col < c.value_dim; ++col) out[col] = 0;
      T sum = 0;
      // Each partition [p0, p0 + block) against its own max: with one
      // partition (kv_len <= 2,048) this is the stable softmax.
      for (int64_t p0 = 0; p0 < c.kv_len; p0 += block) {
        const int64_t p1 = std::min(c.kv_len, p0 + block);
        T m = -std::numeric_limits<T>::infinity();
        for (int64_t j = p0; j < p1; ++j) {
          sees[j] = j < causal_end && (!mask || mask[j] != 0);
          if (!sees[j]) continue;
          T dot = 0;
          for (int64_t d = 0; d < c.head_dim; ++d) dot += q[d] * keys[j * c.head_dim + d];
          weight[j] = scale * dot;
          if (weight[j] > m) m = weight[j];
        }
        for (int64_t j = p0; j < p1; ++j) {
          weight[j] = sees[j] ? std::exp(weight[j] - m) : T(0);
          sum += weight[j];  // the fault: l_p added without exp(m_p - M)
        }
      }
      if (sum == 0) continue;  // a row that sees no key: zeros
      for (int64_t j = 0; j < c.kv_len; ++j) {
        if (!sees[j]) continue;
        const T w = weight[j] / sum;
        for (int64_t col = 0; col < c.value_dim; ++col) out[col] += w * values[j * c.value_dim + col];
      }
    }
  }
}

}  // namespace

int split_kv_merge_unscaled_forward(const attncheck_call* call, char* err, size_t err_len) {
  return dispatch(call, err, err_len, [](const auto& c) { split_kv_attention(c); });
}

}  // namespace attncheck
