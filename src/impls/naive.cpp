// `naive`: the founding C# layer (founding-case.md) made correct, one
// query row at a time with plain loops: preSoftMax over the keys, softmax,
// weighted sum of V rows. The three repairs are marked FIX.
#include <cmath>
#include <limits>
#include <vector>

#include "impls/kernels.h"
#include "impls/typed_call.h"

namespace attncheck {
namespace {

template <class T>
void naive_attention(const TypedCall<T>& c) {
  const T scale = c.abi_scale();
  std::vector<T> pre_softmax(c.kv_len), post_softmax(c.kv_len);
  std::vector<char> sees(c.kv_len);
  for (int64_t bh = 0; bh < c.heads_total(); ++bh) {
    for (int64_t i = 0; i < c.q_len; ++i) {
      const T* q = c.q_head(bh) + i * c.head_dim;      // [head_dim]
      T* output = c.out_head(bh) + i * c.value_dim;    // [value_dim]

      // Attention logits, one per key.
      bool sees_any = false;
      for (int64_t j = 0; j < c.kv_len; ++j) {
        const T* k = c.k_head(bh) + j * c.head_dim;    // [head_dim]
        T dot = 0;
        for (int64_t d = 0; d < c.head_dim; ++d) dot += q[d] * k[d];
        pre_softmax[j] = scale * dot;                  // FIX 1: scaled by 1/sqrt(head_dim)
        sees[j] = visible(c, bh, i, j);                // FIX 2: causal rule and mask
        sees_any = sees_any || sees[j];
      }

      // Softmax over the visible keys, the max subtracted first so exp() cannot overflow.
      T max_logit = -std::numeric_limits<T>::infinity();
      for (int64_t j = 0; j < c.kv_len; ++j)
        if (sees[j] && pre_softmax[j] > max_logit) max_logit = pre_softmax[j];
      T sum = 0;
      for (int64_t j = 0; j < c.kv_len; ++j) {
        post_softmax[j] = sees[j] ? std::exp(pre_softmax[j] - max_logit) : T(0);
        sum += post_softmax[j];
      }

      // FIX 3: the output mixes V rows by the softmax weights (the founding
      // "fix" multiplied by Q instead). A row that sees nothing stays zero.
      for (int64_t col = 0; col < c.value_dim; ++col) output[col] = 0;
      if (!sees_any) continue;
      for (int64_t j = 0; j < c.kv_len; ++j) {
        const T* v = c.v_head(bh) + j * c.value_dim;   // [value_dim]
        const T weight = post_softmax[j] / sum;
        for (int64_t col = 0; col < c.value_dim; ++col) output[col] += v[col] * weight;
      }
    }
  }
}

}  // namespace

int naive_forward(const attncheck_call* call, char* err, size_t err_len) {
  return dispatch(call, err, err_len, [](const auto& c) { naive_attention(c); });
}

}  // namespace attncheck
