// Zoo: the keys of a row are summed in an order that changes from call to call,
// as unordered parallel reductions (atomics, dynamic scheduling) do. Every
// result is as accurate as a correct implementation's, but two identical calls
// can differ in the last bits: only `deterministic` can tell.
#include <atomic>
#include <cmath>
#include <limits>

#include "impls/kernels.h"
#include "impls/typed_call.h"

namespace attncheck {

namespace {

// The calls since the last reset (nondeterministic_order_reset: each new
// instance of the built-in, see in_process.h), so that the order each call
// takes depends only on the calls made to that instance: a check gives the
// same report whichever worker (--jobs) runs which law. Atomic: two instances
// may be called from two threads.
std::atomic<unsigned> calls{0};

template <class T>
void varying_order_attention(const TypedCall<T>& c, bool reversed) {
  const T scale = c.abi_scale();
  for (int64_t bh = 0; bh < c.heads_total(); ++bh)
    for (int64_t i = 0; i < c.q_len; ++i) {
      const T* q = c.q_head(bh) + i * c.head_dim;  // [head_dim]
      T* out = c.out_head(bh) + i * c.value_dim;    // [value_dim]
      T m = -std::numeric_limits<T>::infinity();
      for (int64_t j = 0; j < c.kv_len; ++j) {
        if (!visible(c, bh, i, j)) continue;
        T s = 0;
        for (int64_t d = 0; d < c.head_dim; ++d) s += q[d] * c.k_head(bh)[j * c.head_dim + d];
        m = std::max(m, scale * s);
      }
      for (int64_t col = 0; col < c.value_dim; ++col) out[col] = 0;
      if (m == -std::numeric_limits<T>::infinity()) continue;  // sees nothing: zeros
      T l = 0;
      for (int64_t t = 0; t < c.kv_len; ++t) {
        const int64_t j = reversed ? c.kv_len - 1 - t : t;
        if (!visible(c, bh, i, j)) continue;
        T s = 0;
        for (int64_t d = 0; d < c.head_dim; ++d) s += q[d] * c.k_head(bh)[j * c.head_dim + d];
        const T w = std::exp(scale * s - m);
        l += w;
        for (int64_t col = 0; col < c.value_dim; ++col) out[col] += w * c.v_head(bh)[j * c.value_dim + col];
      }
      for (int64_t col = 0; col < c.value_dim; ++col) out[col] /= l;
    }
}

}  // namespace

int nondeterministic_order_forward(const attncheck_call* call, char* err, size_t err_len) {
  const bool reversed = calls.fetch_add(1) % 2 == 1;
  return dispatch(call, err, err_len, [reversed](const auto& c) { varying_order_attention(c, reversed); });
}

void nondeterministic_order_reset() { calls = 0; }

}  // namespace attncheck
