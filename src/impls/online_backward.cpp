// `online`'s backward, as FlashAttention-2 computes it: the weights are never
// stored, but recomputed tile by tile from each row's lse, p_ij = exp(z_ij -
// lse_i), and the softmax's rowsum term comes from the forward's own output,
// D_i = dO_i . O_i (call->out). No q_len x kv_len matrix exists; each thread
// holds transposed K and V tiles, a few rows of kKeyTile logits, and (in the
// key pass) a tile of dK and dV accumulators.
//
// Two passes, each over independent items split across the cores, so that
// no two threads ever add into the same gradient (deterministic, no atomics):
//   1. rows: item (batch, query head, block of kQueryTile rows). Each row's
//      lse (see below) and D_i, stored for pass 2, then dq_i = scale sum_j
//      dS_ij k_j over the key tiles the block may see.
//   2. keys: item (batch, kv head, tile of kKeyTile keys). For every query
//      head of the kv head's group and every row that may see the tile:
//      dv_j += p_ij dO_i and dk_j += scale dS_ij q_i, in a [dim][kKeyTile]
//      accumulator, written once (overwriting) at the end.
// with dP_ij = dO_i . v_j and dS_ij = p_ij (dP_ij - D_i) (1 - tanh^2(s_ij /
// softcap)), s_ij = scale q_i . k_j. As the forward does, a block skips the
// key tiles outside its rows' causal and window ranges (and past Lk), and a
// key tile the rows whose ranges miss it; padding is never read or written.
//
// The lse. With call->lse (the forward's own, a float) and T = float, it is
// used as it is: the FlashAttention-2 way. A float lse is not accurate enough
// for f64 gradients (its rounding, ~6e-8 |lse|, would be every weight's
// relative error, and an absolute error of ~1e5 at |lse| = 1e12, where
// exp(z - lse) is then meaningless), so in f64, and without call->lse, a
// streaming pass (running max and rescaled sum, as the forward) computes it
// first: one pass over the row's keys, as refining the given one would cost.
// (Refining from the given lse as the reference point failed on a row of one
// key whose logit is 2.6e12: fuzz_differential, regression case.)
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "impls/kernels.h"
#include "impls/online_tiles.h"
#include "impls/typed_grad_v2.h"
#include "parallel/vector_isa.h"
#include "parallel/parallel_for.h"

namespace attncheck {
namespace {

using namespace online_tiles;

constexpr int64_t kQueryTile = 16;  // rows of one query head sharing one pass over K and V (pass 1)

// What pass 1 leaves for pass 2, per row of [batch][heads][q_len] (live rows only).
template <class T>
struct RowTerms {
  std::vector<T> lse;     // lse_i; -inf: the row sees nothing (no sink), it gives nothing
  std::vector<T> rowsum;  // D_i = dO_i . O_i
};

// One thread's working memory.
template <class T>
struct Scratch {
  std::vector<T> k_t, v_t;            // [head_dim][kKeyTile], [value_dim][kKeyTile]: the tiles transposed
  std::vector<T> s, slope, dp;        // [kKeyTile]: logits then weights, soft-cap slopes, dP then dS
  std::vector<T> acc;                 // pass 1: [kQueryTile][head_dim] dq; pass 2: [head_dim + value_dim][kKeyTile]
  Scratch(int64_t head_dim, int64_t value_dim)
      : k_t(head_dim * kKeyTile),
        v_t(value_dim * kKeyTile),
        s(kKeyTile),
        slope(kKeyTile),
        dp(kKeyTile),
        acc(std::max(kQueryTile * head_dim, (head_dim + value_dim) * kKeyTile)) {}
};

// Loads keys [j0, j0 + keys) of kv head g transposed into k_t and v_t, zero past them.
template <class T>
ATTNCHECK_INLINE void load_tiles(const TypedCallV2<T>& c, int64_t b, int64_t g, int64_t j0, int64_t keys,
                                 Scratch<T>& w) {
  std::fill(w.k_t.begin(), w.k_t.end(), T(0));
  std::fill(w.v_t.begin(), w.v_t.end(), T(0));
  for (int64_t jj = 0; jj < keys; ++jj) {
    const T* k = c.k.row(b, g, j0 + jj);  // [head_dim]
    const T* v = c.v.row(b, g, j0 + jj);  // [value_dim]
    for (int64_t d = 0; d < c.head_dim; ++d) w.k_t[d * kKeyTile + jj] = k[d];
    for (int64_t col = 0; col < c.value_dim; ++col) w.v_t[col * kKeyTile + jj] = v[col];
  }
}

// Row i of (b, h) against the loaded tile at j0: w.s = p_ij (0 where
// invisible), w.dp = dS_ij. False when the row sees none of the tile's keys.
// With `seen` [kKeyTile], also marks there the keys the row sees.
template <class T>
ATTNCHECK_INLINE bool tile_gradients(const TypedCallV2<T>& c, const TypedGradV2<T>& g, int64_t b, int64_t h,
                                     int64_t i, int64_t j0, int64_t begin, int64_t end, T lse, T rowsum,
                                     Scratch<T>& w, bool* seen = nullptr) {
  const T minus_inf = -std::numeric_limits<T>::infinity();
  T* __restrict s = w.s.data();
  T* __restrict dp = w.dp.data();
  tile_dot_rows<1>(c.q.row(b, h, i), 0, w.k_t.data(), c.head_dim, s);
  tile_logits(c, b, h, i, j0, begin, end, s, w.slope.data());
  bool any = false;
  for (int64_t jj = 0; jj < kKeyTile; ++jj) any |= s[jj] != minus_inf;
  if (!any) return false;
  if (seen)
    for (int64_t jj = 0; jj < kKeyTile; ++jj) seen[jj] |= s[jj] != minus_inf;
  for (int64_t jj = 0; jj < kKeyTile; ++jj) s[jj] = std::exp(s[jj] - lse);  // exp(-inf) = 0
  tile_dot_rows<1>(g.dout.row(b, h, i), 0, w.v_t.data(), c.value_dim, dp);
  for (int64_t jj = 0; jj < kKeyTile; ++jj) dp[jj] = s[jj] * (dp[jj] - rowsum);
  if (c.softcap > 0)
    for (int64_t jj = 0; jj < kKeyTile; ++jj) dp[jj] *= w.slope[jj];
  return true;
}

// The union of the key ranges of rows [i0, i0 + rows) of batch b; empty if none.
template <class T>
KeyRange block_range(const TypedCallV2<T>& c, int64_t b, int64_t i0, int64_t rows) {
  KeyRange block{std::numeric_limits<int64_t>::max(), 0};
  for (int64_t i = i0; i < i0 + rows; ++i) {
    const KeyRange r = c.key_range(b, i);
    if (r.empty()) continue;
    block.begin = std::min(block.begin, r.begin);
    block.end = std::max(block.end, r.end);
  }
  return block;
}

// The lse of rows [i0, i0 + rows) of (b, h) into lse[0 .. rows): call->lse
// as it is (float), or streamed over the keys (f64, or without it: see the
// file comment); each K tile loaded once for the block.
// -inf for a row that sees no key and has no sink.
template <class T>
ATTNCHECK_INLINE void block_lse(const TypedCallV2<T>& c, int64_t b, int64_t h, int64_t i0, int64_t rows,
                                Scratch<T>& w, T* __restrict lse) {
  const T minus_inf = -std::numeric_limits<T>::infinity();
  const float* given = c.lse_row(b, h);  // [q_len] or nullptr
  if (given && std::is_same_v<T, float>) {
    for (int64_t r = 0; r < rows; ++r) lse[r] = static_cast<T>(given[i0 + r]);
    return;
  }
  // Per row: the running max m and the sum of exp(z - m), the sink's term included.
  const T sink = c.sink_of(h);
  T max[kQueryTile], sum[kQueryTile];
  for (int64_t r = 0; r < rows; ++r) {
    max[r] = sink;
    sum[r] = c.sinks ? T(1) : T(0);  // exp(sink - sink)
  }
  T* __restrict s = w.s.data();
  const int64_t kv_head = c.kv_head_of(h);
  const KeyRange block = block_range(c, b, i0, rows);
  const int64_t first = block.empty() ? block.end : block.begin - block.begin % kKeyTile;
  for (int64_t j0 = first; j0 < block.end; j0 += kKeyTile) {
    const int64_t keys = std::min(kKeyTile, block.end - j0);
    std::fill(w.k_t.begin(), w.k_t.end(), T(0));
    for (int64_t jj = 0; jj < keys; ++jj) {
      const T* k = c.k.row(b, kv_head, j0 + jj);  // [head_dim]
      for (int64_t d = 0; d < c.head_dim; ++d) w.k_t[d * kKeyTile + jj] = k[d];
    }
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      const KeyRange range = c.key_range(b, i);
      const int64_t begin = std::clamp<int64_t>(range.begin - j0, 0, keys);
      const int64_t end = std::clamp<int64_t>(range.end - j0, 0, keys);
      if (begin >= end) continue;
      tile_dot_rows<1>(c.q.row(b, h, i), 0, w.k_t.data(), c.head_dim, s);
      tile_logits(c, b, h, i, j0, begin, end, s, w.slope.data());
      {
        // As the forward: a NaN logit becomes the max and poisons the row.
        T tile_max = minus_inf;
        for (int64_t jj = 0; jj < kKeyTile; ++jj) tile_max = s[jj] > tile_max || s[jj] != s[jj] ? s[jj] : tile_max;
        const T new_max = tile_max > max[r] || tile_max != tile_max ? tile_max : max[r];
        if (new_max == minus_inf) continue;  // nothing visible yet, no sink: exp(-inf - -inf) would be NaN
        sum[r] *= std::exp(max[r] - new_max);
        max[r] = new_max;
      }
      T tile_sum = 0;
      for (int64_t jj = 0; jj < kKeyTile; ++jj) tile_sum += std::exp(s[jj] - max[r]);
      sum[r] += tile_sum;
    }
  }
  for (int64_t r = 0; r < rows; ++r) lse[r] = sum[r] > 0 || sum[r] != sum[r] ? max[r] + std::log(sum[r]) : minus_inf;
}

// Pass 1 on one block of rows [i0, i0 + rows) of (b, h).
template <class T>
ATTNCHECK_INLINE void row_block_body(const TypedCallV2<T>& c, const TypedGradV2<T>& g, int64_t b, int64_t h,
                                     int64_t i0, int64_t rows, RowTerms<T>& terms, Scratch<T>& w) {
  const T minus_inf = -std::numeric_limits<T>::infinity();
  const int64_t head_dim = c.head_dim;
  const int64_t kv_head = c.kv_head_of(h);
  const int64_t base = (b * c.heads + h) * c.q_len;
  bool saw[kQueryTile] = {};
  block_lse(c, b, h, i0, rows, w, terms.lse.data() + base + i0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = i0 + r;
    const T* dout = g.dout.row(b, h, i);
    const T* out = c.out.row(b, h, i);
    T rowsum = 0;
    for (int64_t col = 0; col < c.value_dim; ++col) rowsum += dout[col] * out[col];
    terms.rowsum[base + i] = rowsum;
  }
  T* acc = w.acc.data();  // [kQueryTile][head_dim]
  std::fill(acc, acc + kQueryTile * head_dim, T(0));
  const KeyRange block = block_range(c, b, i0, rows);
  const int64_t first = block.empty() ? block.end : block.begin - block.begin % kKeyTile;
  for (int64_t j0 = first; j0 < block.end; j0 += kKeyTile) {
    const int64_t keys = std::min(kKeyTile, block.end - j0);
    load_tiles(c, b, kv_head, j0, keys, w);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      const T lse = terms.lse[base + i];
      if (lse == minus_inf) continue;
      const KeyRange range = c.key_range(b, i);
      const int64_t begin = std::clamp<int64_t>(range.begin - j0, 0, keys);
      const int64_t end = std::clamp<int64_t>(range.end - j0, 0, keys);
      if (begin >= end) continue;
      if (!tile_gradients(c, g, b, h, i, j0, begin, end, lse, terms.rowsum[base + i], w)) continue;
      saw[r] = true;
      // dq_i += sum_jj dS_jj k_jj, k rows read in place.
      T* __restrict dq = acc + r * head_dim;
      const T* __restrict ds = w.dp.data();
      for (int64_t jj = begin; jj < end; ++jj) {
        const T* __restrict k = c.k.row(b, kv_head, j0 + jj);
        const T dsj = ds[jj];
        for (int64_t d = 0; d < head_dim; ++d) dq[d] += dsj * k[d];
      }
    }
  }
  const T scale = c.abi_scale();
  for (int64_t r = 0; r < rows; ++r) {
    T* dq = g.dq.row(b, h, i0 + r);  // [head_dim]
    for (int64_t d = 0; d < head_dim; ++d) dq[d] = saw[r] ? scale * acc[r * head_dim + d] : T(0);
  }
}

// Pass 2 on one key tile [j0, j0 + keys) of (b, kv head g).
template <class T>
ATTNCHECK_INLINE void key_tile_body(const TypedCallV2<T>& c, const TypedGradV2<T>& g, int64_t b, int64_t kv_head,
                                    int64_t j0, int64_t keys, const RowTerms<T>& terms, Scratch<T>& w) {
  const T minus_inf = -std::numeric_limits<T>::infinity();
  const int64_t head_dim = c.head_dim, value_dim = c.value_dim;
  T* __restrict dk_t = w.acc.data();                      // [head_dim][kKeyTile]
  T* __restrict dv_t = w.acc.data() + head_dim * kKeyTile;  // [value_dim][kKeyTile]
  std::fill(w.acc.begin(), w.acc.begin() + (head_dim + value_dim) * kKeyTile, T(0));
  load_tiles(c, b, kv_head, j0, keys, w);
  bool seen[kKeyTile] = {};  // keys of the tile some row sees
  const int64_t rows = c.q_len_of(b);
  for (int64_t h = kv_head * c.group(); h < (kv_head + 1) * c.group(); ++h) {
    const int64_t base = (b * c.heads + h) * c.q_len;
    for (int64_t i = 0; i < rows; ++i) {
      const T lse = terms.lse[base + i];
      if (lse == minus_inf) continue;
      const KeyRange range = c.key_range(b, i);
      const int64_t begin = std::clamp<int64_t>(range.begin - j0, 0, keys);
      const int64_t end = std::clamp<int64_t>(range.end - j0, 0, keys);
      if (begin >= end) continue;
      if (!tile_gradients(c, g, b, h, i, j0, begin, end, lse, terms.rowsum[base + i], w, seen)) continue;
      const T* __restrict p = w.s.data();
      const T* __restrict ds = w.dp.data();
      const T* __restrict q = c.q.row(b, h, i);
      const T* __restrict dout = g.dout.row(b, h, i);
      for (int64_t d = 0; d < head_dim; ++d) {
        const T qd = q[d];
        T* __restrict row = dk_t + d * kKeyTile;
        for (int64_t jj = 0; jj < kKeyTile; ++jj) row[jj] += ds[jj] * qd;
      }
      for (int64_t col = 0; col < value_dim; ++col) {
        const T o = dout[col];
        T* __restrict row = dv_t + col * kKeyTile;
        for (int64_t jj = 0; jj < kKeyTile; ++jj) row[jj] += p[jj] * o;
      }
    }
  }
  // Every live key of the tile is written: exactly 0 for one that no row
  // sees, whatever the accumulators hold (an infinite scale times their 0 is
  // NaN, and so is a hidden key's weight 0 times an infinite dO: found by
  // fuzz_gradients, regression case grad_empty_rows_zero-c8dcd89c315245d9).
  const T scale = c.abi_scale();
  for (int64_t jj = 0; jj < keys; ++jj) {
    T* dk = g.dk.row(b, kv_head, j0 + jj);
    T* dv = g.dv.row(b, kv_head, j0 + jj);
    for (int64_t d = 0; d < head_dim; ++d) dk[d] = seen[jj] ? scale * dk_t[d * kKeyTile + jj] : T(0);
    for (int64_t col = 0; col < value_dim; ++col) dv[col] = seen[jj] ? dv_t[col * kKeyTile + jj] : T(0);
  }
}

// The entry points in the build of their loops that this CPU runs (vector_isa.h).
template <class T>
void row_block(const TypedCallV2<T>& c, const TypedGradV2<T>& g, int64_t b, int64_t h, int64_t i0, int64_t rows,
               RowTerms<T>& terms, Scratch<T>& w) {
  run_in_vector_build([&](auto) __attribute__((always_inline)) { row_block_body(c, g, b, h, i0, rows, terms, w); });
}
template <class T>
void key_tile(const TypedCallV2<T>& c, const TypedGradV2<T>& g, int64_t b, int64_t kv_head, int64_t j0, int64_t keys,
              const RowTerms<T>& terms, Scratch<T>& w) {
  run_in_vector_build([&](auto) __attribute__((always_inline)) { key_tile_body(c, g, b, kv_head, j0, keys, terms, w); });
}

template <class T>
void online_gradients(const TypedCallV2<T>& c, const TypedGradV2<T>& g) {
  RowTerms<T> terms;
  const std::size_t all_rows = static_cast<std::size_t>(c.batch * c.heads * c.q_len);
  terms.lse.assign(all_rows, T(0));
  terms.rowsum.assign(all_rows, T(0));
  const double dims = static_cast<double>(2 * c.head_dim + c.value_dim);

  // Pass 1: (batch, query head, row block); blocks at or past Lq do nothing.
  const int64_t blocks = (c.q_len + kQueryTile - 1) / kQueryTile;
  parallel_for(c.batch * c.heads * blocks, 2.0 * kQueryTile * static_cast<double>(c.kv_len) * dims,
               [&](int64_t begin, int64_t end) {
                 Scratch<T> w(c.head_dim, c.value_dim);
                 for (int64_t item = begin; item < end; ++item) {
                   const int64_t bh = item / blocks, i0 = (item % blocks) * kQueryTile;
                   const int64_t b = bh / c.heads, h = bh % c.heads;
                   const int64_t rows = std::min(kQueryTile, c.q_len_of(b) - i0);
                   if (rows > 0) row_block(c, g, b, h, i0, rows, terms, w);
                 }
               });

  // Pass 2: (batch, kv head, key tile); tiles at or past Lk do nothing.
  const int64_t tiles = (c.kv_len + kKeyTile - 1) / kKeyTile;
  parallel_for(c.batch * c.kv_heads * tiles,
               2.0 * kKeyTile * static_cast<double>(c.group() * c.q_len) * (dims + c.value_dim),
               [&](int64_t begin, int64_t end) {
                 Scratch<T> w(c.head_dim, c.value_dim);
                 for (int64_t item = begin; item < end; ++item) {
                   const int64_t bg = item / tiles, j0 = (item % tiles) * kKeyTile;
                   const int64_t b = bg / c.kv_heads, kv_head = bg % c.kv_heads;
                   const int64_t keys = std::min(kKeyTile, c.kv_len_of(b) - j0);
                   if (keys > 0) key_tile(c, g, b, kv_head, j0, keys, terms, w);
                 }
               });
}

}  // namespace

int online_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t err_len) {
  return dispatch_backward_v2(call, grad, err, err_len, [](const auto& c, const auto& g) { online_gradients(c, g); });
}

}  // namespace attncheck
