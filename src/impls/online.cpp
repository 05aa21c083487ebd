// `online`: streaming softmax in tiles, as FlashAttention computes it. A block
// of query rows walks over the keys one tile at a time, keeping per row a
// running max m, a running sum l of exp(logit - m) and an accumulator of
// exp(logit - m) * V rows; when m grows, l and the accumulator are rescaled by
// exp(m_old - m_new). The full q_len x kv_len score matrix never exists, which
// is why this order of operations is worth checking against `reference`.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "impls/kernels.h"
#include "impls/typed_call.h"

namespace attncheck {
namespace {

constexpr int64_t kQueryTile = 16;  // query rows sharing one pass over K and V
constexpr int64_t kKeyTile = 32;    // keys per step; a compile-time trip count for the vector loops

// Per query row: running max, running sum, and the unnormalised output.
template <class T>
struct RowState {
  std::vector<T> max, sum;  // [kQueryTile]
  std::vector<T> acc;       // [kQueryTile][value_dim]
  explicit RowState(int64_t value_dim) : max(kQueryTile), sum(kQueryTile), acc(kQueryTile * value_dim) {}
  void reset() {
    std::fill(max.begin(), max.end(), -std::numeric_limits<T>::infinity());
    std::fill(sum.begin(), sum.end(), T(0));
    std::fill(acc.begin(), acc.end(), T(0));
  }
};

// scores[jj] = q . k_jj for one query row over one key tile. k_t is the tile
// transposed, [head_dim][kKeyTile], zero past the tile's real keys, so the
// inner loop is a contiguous axpy (no reduction: vectorises without -ffast-math).
template <class T>
void tile_dot(const T* __restrict q, const T* __restrict k_t, int64_t head_dim, T* __restrict scores) {
  for (int64_t jj = 0; jj < kKeyTile; ++jj) scores[jj] = 0;
  for (int64_t d = 0; d < head_dim; ++d) {
    const T qd = q[d];
    const T* __restrict kd = k_t + d * kKeyTile;
    for (int64_t jj = 0; jj < kKeyTile; ++jj) scores[jj] += qd * kd[jj];
  }
}

// acc[col] = acc[col] * alpha + sum_jj p[jj] * v[jj][col], v: [keys][value_dim].
template <class T>
void tile_accumulate(T* __restrict acc, T alpha, const T* __restrict p, const T* __restrict v,
                     int64_t keys, int64_t value_dim) {
  for (int64_t col = 0; col < value_dim; ++col) acc[col] *= alpha;
  for (int64_t jj = 0; jj < keys; ++jj) {
    const T pj = p[jj];
    const T* __restrict vj = v + jj * value_dim;
    for (int64_t col = 0; col < value_dim; ++col) acc[col] += pj * vj[col];
  }
}

template <class T>
void online_attention(const TypedCall<T>& c) {
  const T scale = c.abi_scale();
  const T minus_inf = -std::numeric_limits<T>::infinity();
  const int64_t head_dim = c.head_dim, value_dim = c.value_dim;
  std::vector<T> k_t(head_dim * kKeyTile);        // [head_dim][kKeyTile]
  std::vector<T> scores(kQueryTile * kKeyTile);   // [kQueryTile][kKeyTile], logits then weights
  RowState<T> state(value_dim);

  for (int64_t bh = 0; bh < c.heads_total(); ++bh) {
    const T* q = c.q_head(bh);             // [q_len][head_dim]
    const T* k = c.k_head(bh);             // [kv_len][head_dim]
    const T* v = c.v_head(bh);             // [kv_len][value_dim]
    const uint8_t* mask = c.mask_head(bh); // [q_len][kv_len] or nullptr
    T* out = c.out_head(bh);               // [q_len][value_dim]

    for (int64_t i0 = 0; i0 < c.q_len; i0 += kQueryTile) {
      const int64_t rows = std::min(kQueryTile, c.q_len - i0);
      state.reset();
      // Causal ends grow with the row, so keys past the last row's end are
      // invisible to the whole block and are never loaded.
      const int64_t block_key_end =
          std::clamp<int64_t>(causal_key_end(c.causal, c.q_len, c.kv_len, i0 + rows - 1), 0, c.kv_len);

      for (int64_t j0 = 0; j0 < block_key_end; j0 += kKeyTile) {
        const int64_t keys = std::min(kKeyTile, c.kv_len - j0);
        std::fill(k_t.begin(), k_t.end(), T(0));
        for (int64_t jj = 0; jj < keys; ++jj)
          for (int64_t d = 0; d < head_dim; ++d) k_t[d * kKeyTile + jj] = k[(j0 + jj) * head_dim + d];

        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = i0 + r;
          T* s = scores.data() + r * kKeyTile;
          tile_dot(q + i * head_dim, k_t.data(), head_dim, s);

          // Invisible keys (past the causal end, masked, or padding past `keys`) get -inf.
          const int64_t visible_end = std::clamp<int64_t>(causal_key_end(c.causal, c.q_len, c.kv_len, i) - j0, 0, keys);
          // Two split loops rather than one select on jj: g++ 12 vectorises these.
          for (int64_t jj = 0; jj < visible_end; ++jj) s[jj] *= scale;
          for (int64_t jj = visible_end; jj < kKeyTile; ++jj) s[jj] = minus_inf;
          if (mask) {
            const uint8_t* m = mask + i * c.kv_len + j0;
            for (int64_t jj = 0; jj < visible_end; ++jj) s[jj] = m[jj] ? s[jj] : minus_inf;
          }

          // A NaN logit must poison the row, as it does in exact arithmetic:
          // std::max would drop it (NaN compares false), so select it explicitly.
          T tile_max = minus_inf;
          for (int64_t jj = 0; jj < kKeyTile; ++jj) tile_max = (s[jj] > tile_max || s[jj] != s[jj]) ? s[jj] : tile_max;
          const T old_max = state.max[r];
          const T new_max = (tile_max > old_max || tile_max != tile_max) ? tile_max : old_max;
          // Nothing visible to this row yet: keep the state as it is, since
          // exp(-inf - (-inf)) would be NaN.
          if (new_max == minus_inf) continue;

          const T alpha = std::exp(state.max[r] - new_max);  // 0 on the row's first visible tile
          T tile_sum = 0;
          for (int64_t jj = 0; jj < kKeyTile; ++jj) {
            s[jj] = std::exp(s[jj] - new_max);  // invisible: exp(-inf) = 0
            tile_sum += s[jj];
          }
          state.sum[r] = state.sum[r] * alpha + tile_sum;
          state.max[r] = new_max;
          tile_accumulate(state.acc.data() + r * value_dim, alpha, s, v + j0 * value_dim, keys, value_dim);
        }
      }

      // Normalise; a row that never saw a key has sum 0 and gets zeros.
      for (int64_t r = 0; r < rows; ++r) {
        const T* acc = state.acc.data() + r * value_dim;
        T* o = out + (i0 + r) * value_dim;
        const T l = state.sum[r];
        if (l > 0 || l != l)  // a NaN sum stays NaN: it came from a NaN the row can see
          for (int64_t col = 0; col < value_dim; ++col) o[col] = acc[col] / l;
        else
          std::fill(o, o + value_dim, T(0));
      }
    }
  }
}

}  // namespace

int online_forward(const attncheck_call* call, char* err, size_t err_len) {
  return dispatch(call, err, err_len, [](const auto& c) { online_attention(c); });
}

}  // namespace attncheck
