// `online`: streaming softmax in tiles, as FlashAttention computes it. A block
// of query rows walks over the keys one tile at a time, keeping per row a
// running max m, a running sum l of exp(logit - m) and an accumulator of
// exp(logit - m) * V rows; when m grows, l and the accumulator are rescaled by
// exp(m_old - m_new). The full q_len x kv_len score matrix never exists, which
// is why this order of operations is worth checking against `reference`: each
// thread holds one kQueryTile x kKeyTile tile of scores, one transposed key
// tile and its rows' state, whatever the shape.
//
// Speed: the (batch*head, query block) items are independent and split across
// the cores with parallel_for (serial inside a parallel check's workers, which
// set a limit of 1). The block's arithmetic is compiled once per vector ISA
// and picked at load time for the CPU it runs on (ATTNCHECK_VECTOR_CLONES):
// the library is built without -march, and plain loops over raw arrays of
// compile-time length vectorise for AVX-512 or AVX2 as well as for SSE2. Every
// clone computes each row in the same order, so a call is deterministic on a
// given machine; clones differ from each other only by FMA contraction (one
// rounding fewer per multiply-add), well inside the oracle's bound.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "impls/kernels.h"
#include "impls/typed_call.h"
#include "parallel/parallel_for.h"

// GCC and clang on x86-64: one clone per ISA, chosen by an ifunc resolver at
// load time. ISA-only targets ("avx512f", not "arch=..."): the clones keep the
// default tuning, so the ordinary inline functions they call (TypedCall's
// accessors, std::min) still inline into them. Elsewhere, or with
// -DATTNCHECK_NO_TARGET_CLONES, one version built with the build's flags.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(ATTNCHECK_NO_TARGET_CLONES) && \
    defined(__has_attribute)
#if __has_attribute(target_clones)
#define ATTNCHECK_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef ATTNCHECK_VECTOR_CLONES
#define ATTNCHECK_VECTOR_CLONES
#endif

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

// One thread's working memory, reused for every block it computes.
template <class T>
struct BlockScratch {
  std::vector<T> k_t;     // [head_dim][kKeyTile]: the key tile transposed
  std::vector<T> scores;  // [kQueryTile][kKeyTile]: logits, then weights
  RowState<T> state;
  BlockScratch(int64_t head_dim, int64_t value_dim)
      : k_t(head_dim * kKeyTile), scores(kQueryTile * kKeyTile), state(value_dim) {}
};

// The helpers below are always inlined, so that each ISA clone of
// query_block compiles them with its own instruction set.
#define ATTNCHECK_INLINE inline __attribute__((always_inline))

// scores[jj] = q . k_jj for one query row over one key tile. k_t is the tile
// transposed, [head_dim][kKeyTile], zero past the tile's real keys, so the
// inner loop is a contiguous axpy (no reduction: vectorises without -ffast-math).
// Four dimensions per pass over scores, added one after the other, so each
// score sums q_d k_d in order d = 0, 1, ... as a plain loop would, with a
// quarter of the loads and stores of scores.
template <class T>
ATTNCHECK_INLINE void tile_dot(const T* __restrict q, const T* __restrict k_t, int64_t head_dim, T* __restrict scores) {
  for (int64_t jj = 0; jj < kKeyTile; ++jj) scores[jj] = 0;
  int64_t d = 0;
  for (; d + 4 <= head_dim; d += 4) {
    const T q0 = q[d], q1 = q[d + 1], q2 = q[d + 2], q3 = q[d + 3];
    const T* __restrict k0 = k_t + d * kKeyTile;
    for (int64_t jj = 0; jj < kKeyTile; ++jj) {
      T sum = scores[jj];
      sum += q0 * k0[jj];
      sum += q1 * k0[kKeyTile + jj];
      sum += q2 * k0[2 * kKeyTile + jj];
      sum += q3 * k0[3 * kKeyTile + jj];
      scores[jj] = sum;
    }
  }
  for (; d < head_dim; ++d) {
    const T qd = q[d];
    const T* __restrict kd = k_t + d * kKeyTile;
    for (int64_t jj = 0; jj < kKeyTile; ++jj) scores[jj] += qd * kd[jj];
  }
}

// acc[col] = acc[col] * alpha + sum_jj p[jj] * v[jj][col], v: [keys][value_dim].
// Four keys per pass over acc, added in key order as a plain loop would.
template <class T>
ATTNCHECK_INLINE void tile_accumulate(T* __restrict acc, T alpha, const T* __restrict p, const T* __restrict v,
                                      int64_t keys, int64_t value_dim) {
  for (int64_t col = 0; col < value_dim; ++col) acc[col] *= alpha;
  int64_t jj = 0;
  for (; jj + 4 <= keys; jj += 4) {
    const T p0 = p[jj], p1 = p[jj + 1], p2 = p[jj + 2], p3 = p[jj + 3];
    const T* __restrict v0 = v + jj * value_dim;
    const T* __restrict v1 = v0 + value_dim;
    const T* __restrict v2 = v1 + value_dim;
    const T* __restrict v3 = v2 + value_dim;
    for (int64_t col = 0; col < value_dim; ++col) {
      T sum = acc[col];
      sum += p0 * v0[col];
      sum += p1 * v1[col];
      sum += p2 * v2[col];
      sum += p3 * v3[col];
      acc[col] = sum;
    }
  }
  for (; jj < keys; ++jj) {
    const T pj = p[jj];
    const T* __restrict vj = v + jj * value_dim;
    for (int64_t col = 0; col < value_dim; ++col) acc[col] += pj * vj[col];
  }
}

// Query rows [i0, i0 + kQueryTile) of head bh (fewer at the end): the whole
// streaming pass over the keys, then the normalised rows written to out.
template <class T>
ATTNCHECK_INLINE void query_block_body(const TypedCall<T>& c, int64_t bh, int64_t i0, BlockScratch<T>& scratch) {
  const T scale = c.abi_scale();
  const T minus_inf = -std::numeric_limits<T>::infinity();
  const int64_t head_dim = c.head_dim, value_dim = c.value_dim;
  const T* q = c.q_head(bh);             // [q_len][head_dim]
  const T* k = c.k_head(bh);             // [kv_len][head_dim]
  const T* v = c.v_head(bh);             // [kv_len][value_dim]
  const uint8_t* mask = c.mask_head(bh); // [q_len][kv_len] or nullptr
  T* out = c.out_head(bh);               // [q_len][value_dim]
  T* k_t = scratch.k_t.data();
  RowState<T>& state = scratch.state;

  const int64_t rows = std::min(kQueryTile, c.q_len - i0);
  state.reset();
  // Causal ends grow with the row, so keys past the last row's end are
  // invisible to the whole block and are never loaded.
  const int64_t block_key_end =
      std::clamp<int64_t>(causal_key_end(c.causal, c.q_len, c.kv_len, i0 + rows - 1), 0, c.kv_len);

  for (int64_t j0 = 0; j0 < block_key_end; j0 += kKeyTile) {
    const int64_t keys = std::min(kKeyTile, c.kv_len - j0);
    std::fill(k_t, k_t + head_dim * kKeyTile, T(0));
    for (int64_t jj = 0; jj < keys; ++jj)
      for (int64_t d = 0; d < head_dim; ++d) k_t[d * kKeyTile + jj] = k[(j0 + jj) * head_dim + d];

    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      T* s = scratch.scores.data() + r * kKeyTile;
      tile_dot(q + i * head_dim, k_t, head_dim, s);

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
      // a max over compares drops it (NaN compares false), so the tile's max
      // becomes its first NaN when it has one. Branch-free max and NaN test,
      // and a second look only for the rare tile with a NaN.
      T tile_max = minus_inf;
      bool has_nan = false;
      for (int64_t jj = 0; jj < kKeyTile; ++jj) {
        tile_max = s[jj] > tile_max ? s[jj] : tile_max;
        has_nan |= s[jj] != s[jj];
      }
      if (has_nan)
        for (int64_t jj = 0; jj < kKeyTile; ++jj)
          if (s[jj] != s[jj]) {
            tile_max = s[jj];
            break;
          }
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

// The cloned entry points: one per dtype, since a template cannot be cloned.
ATTNCHECK_VECTOR_CLONES void query_block(const TypedCall<float>& c, int64_t bh, int64_t i0,
                                         BlockScratch<float>& scratch) {
  query_block_body(c, bh, i0, scratch);
}
ATTNCHECK_VECTOR_CLONES void query_block(const TypedCall<double>& c, int64_t bh, int64_t i0,
                                         BlockScratch<double>& scratch) {
  query_block_body(c, bh, i0, scratch);
}

template <class T>
void online_attention(const TypedCall<T>& c) {
  // Items: (head bh, query block) pairs, [heads_total][blocks]. Under a causal
  // rule late blocks see more keys than early ones, and parallel_for hands out
  // contiguous ranges; so within a head, item n computes block n/2 for even n
  // and block (blocks - 1 - n/2) for odd n, which pairs a cheap block with a
  // dear one in every range.
  const int64_t blocks = (c.q_len + kQueryTile - 1) / kQueryTile;
  const double flop_per_block = 2.0 * static_cast<double>(kQueryTile * c.kv_len) *
                                static_cast<double>(c.head_dim + c.value_dim);  // dense; causal does less
  parallel_for(c.heads_total() * blocks, flop_per_block, [&](int64_t begin, int64_t end) {
    BlockScratch<T> scratch(c.head_dim, c.value_dim);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t bh = item / blocks, n = item % blocks;
      const int64_t block = n % 2 == 0 ? n / 2 : blocks - 1 - n / 2;
      query_block(c, bh, block * kQueryTile, scratch);
    }
  });
}

}  // namespace

int online_forward(const attncheck_call* call, char* err, size_t err_len) {
  return dispatch(call, err, err_len, [](const auto& c) { online_attention(c); });
}

}  // namespace attncheck
