// Zoo: the row reductions of a query tile taken over the whole tile. A
// FlashAttention-style kernel holds a tile of kTileRows query rows by the key
// block's scores S_tile [kTileRows][kv_len]; its running max and running sum
// must be reduced along the keys of each row (Triton: tl.max(s, axis=1),
// tl.sum(p, axis=1)). Written without the axis (tl.max(s), tl.sum(p)), both
// become one scalar shared by the tile's rows: every row is divided by the sum
// of all its tile's weights, so a row's output depends on which rows share its
// tile. A row alone in its tile, or a tile whose other rows see no key, is right.
//
// Caught by query_permutation_equivariance (moving rows between tiles changes
// their outputs) whenever q_len > kTileRows, and by every law that knows the
// weights of a row sum to 1.
#include <cmath>
#include <limits>
#include <vector>

#include "impls/kernels.h"
#include "impls/typed_call.h"

namespace attncheck {

namespace {

// Query rows per tile: small, so that the laws' short sequences span several tiles.
constexpr int64_t kTileRows = 4;

template <class T>
void tile_shared_rowsum_attention(const TypedCall<T>& c) {
  const T scale = c.abi_scale();
  std::vector<T> s;  // [kTileRows][kv_len]: the tile's scaled logits, -inf where not visible
  for (int64_t bh = 0; bh < c.heads_total(); ++bh)
    for (int64_t i0 = 0; i0 < c.q_len; i0 += kTileRows) {
      const int64_t rows = std::min(kTileRows, c.q_len - i0);
      s.assign(static_cast<std::size_t>(rows * c.kv_len), -std::numeric_limits<T>::infinity());
      // The fault, 1 of 2: one max over the whole tile (tl.max(s)), not one per row.
      T m = -std::numeric_limits<T>::infinity();
      for (int64_t r = 0; r < rows; ++r) {
        const T* q = c.q_head(bh) + (i0 + r) * c.head_dim;  // [head_dim]
        for (int64_t j = 0; j < c.kv_len; ++j) {
          if (!visible(c, bh, i0 + r, j)) continue;
          T dot = 0;
          for (int64_t d = 0; d < c.head_dim; ++d) dot += q[d] * c.k_head(bh)[j * c.head_dim + d];
          s[r * c.kv_len + j] = scale * dot;
          m = std::max(m, scale * dot);
        }
      }
      // The fault, 2 of 2: one sum of weights over the whole tile (tl.sum(p)).
      T l = 0;
      for (int64_t r = 0; r < rows; ++r) {
        T* out = c.out_head(bh) + (i0 + r) * c.value_dim;  // [value_dim]
        for (int64_t col = 0; col < c.value_dim; ++col) out[col] = 0;
        for (int64_t j = 0; j < c.kv_len; ++j) {
          if (s[r * c.kv_len + j] == -std::numeric_limits<T>::infinity()) continue;  // not visible
          const T w = std::exp(s[r * c.kv_len + j] - m);
          l += w;
          for (int64_t col = 0; col < c.value_dim; ++col) out[col] += w * c.v_head(bh)[j * c.value_dim + col];
        }
      }
      if (l == 0) continue;  // no row of the tile sees a key: zeros
      for (int64_t r = 0; r < rows; ++r) {
        T* out = c.out_head(bh) + (i0 + r) * c.value_dim;
        for (int64_t col = 0; col < c.value_dim; ++col) out[col] /= l;
      }
    }
}

}  // namespace

int query_tile_shared_rowsum_forward(const attncheck_call* call, char* err, size_t err_len) {
  return dispatch(call, err, err_len, [](const auto& c) { tile_shared_rowsum_attention(c); });
}

}  // namespace attncheck
