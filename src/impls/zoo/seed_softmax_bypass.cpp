// Zoo: the founding "fix" (founding-case.md). The softmax weights are dropped
// and Q multiplies V directly: out[i][c] = sum over visible keys j of
// V[j][c] * Q[i][c % head_dim]. Not attention: no convex combination, weights
// that do not sum to one, no dependence on K at all.
#include "impls/kernels.h"
#include "impls/typed_call.h"

namespace attncheck {
namespace {

template <class T>
void softmax_bypass(const TypedCall<T>& c) {
  for (int64_t bh = 0; bh < c.heads_total(); ++bh) {
    for (int64_t i = 0; i < c.q_len; ++i) {
      const T* q = c.q_head(bh) + i * c.head_dim;  // [head_dim]
      T* out = c.out_head(bh) + i * c.value_dim;    // [value_dim]
      for (int64_t col = 0; col < c.value_dim; ++col) out[col] = 0;
      for (int64_t j = 0; j < c.kv_len; ++j) {
        if (!visible(c, bh, i, j)) continue;
        const T* v = c.v_head(bh) + j * c.value_dim;  // [value_dim]
        // The C# had head_dim == value_dim; wrap Q when they differ.
        for (int64_t col = 0; col < c.value_dim; ++col) out[col] += v[col] * q[col % c.head_dim];
      }
    }
  }
}

}  // namespace

int seed_softmax_bypass_forward(const attncheck_call* call, char* err, size_t err_len) {
  return dispatch(call, err, err_len, [](const auto& c) { softmax_bypass(c); });
}

}  // namespace attncheck
