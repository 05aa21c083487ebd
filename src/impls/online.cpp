// `online`: streaming softmax in tiles, as FlashAttention computes it. A block
// of query rows walks over the keys one tile at a time, keeping per row a
// running max m, a running sum l of exp(logit - m) and an accumulator of
// exp(logit - m) * V rows; when m grows, l and the accumulator are rescaled by
// exp(m_old - m_new). The full q_len x kv_len score matrix never exists, which
// is why this order of operations is worth checking against `reference`: each
// thread holds one transposed key tile, kRowGroup rows of kKeyTile scores and its
// rows' state, whatever the shape.
//
// As real kernels do, a block skips every key tile outside its rows' causal
// and window ranges (and past Lk) without loading it, and the query heads of
// a GQA group (up to kHeadTile of them) walk the keys together: each K tile
// is loaded and transposed once for all of them, and V is read in place once
// per tile for all of them.
//
// Speed: the (batch*head, query block) items are independent and split across
// the cores with parallel_for (serial inside a parallel check's workers, which
// set a limit of 1). The block's arithmetic is compiled once per vector ISA
// and picked for the CPU it runs on (vector_isa.h): the library is built
// without -march, and plain loops over raw arrays of compile-time length
// vectorise for AVX-512 or AVX2 (both with FMA) as well as for SSE2. Every
// build computes each row in the same order, so a call is deterministic on a
// given machine; builds differ from each other only by FMA contraction (one
// rounding fewer per multiply-add), well inside the oracle's bound.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "impls/kernels.h"
#include "impls/online_exp.h"
#include "impls/online_tiles.h"
#include "impls/typed_call_v2.h"
#include "parallel/vector_isa.h"
#include "parallel/parallel_for.h"

namespace attncheck {
namespace {

using namespace online_tiles;

constexpr int64_t kRowGroup = 4;    // query rows sharing each load of a K tile and of V (tile_dot_rows)
constexpr int64_t kBlockRows = 64;  // query rows (of all its heads) sharing one pass of a block over K and V
constexpr int64_t kHeadTile = 8;    // query heads of one GQA group sharing that pass (a larger group is cut in chunks)

// Per query row: running max, running sum, and the unnormalised output. With
// a sink s a row starts at max s and sum exp(s - s) = 1: the sink is one more
// term of the denominator, rescaled with the rest, and has no value row.
template <class T>
struct RowState {
  std::vector<T> max, sum;  // [kBlockRows]: row hh * query_tile + r is row r of the block's head hh
  std::vector<T> acc;       // [kBlockRows][value_dim]
  explicit RowState(int64_t value_dim) : max(kBlockRows), sum(kBlockRows), acc(kBlockRows * value_dim) {}
};

// One thread's working memory, reused for every block it computes.
template <class T>
struct BlockScratch {
  std::vector<T> k_t;     // [head_dim][kKeyTile]: the key tile transposed
  std::vector<T> scores;  // [kRowGroup][kKeyTile]: a row group's logits, then weights
  RowState<T> state;
  BlockScratch(int64_t head_dim, int64_t value_dim)
      : k_t(head_dim * kKeyTile), scores(kRowGroup * kKeyTile), state(value_dim) {}
};

// The rows one block computes: rows [i0, i0 + rows) of query heads
// [h0, h0 + heads) of batch b, all of which read kv head kv_head; rows <=
// query_tile, and heads * query_tile <= kBlockRows.
struct Block {
  int64_t b = 0, kv_head = 0, h0 = 0, heads = 0, i0 = 0, rows = 0, query_tile = 0;
};

// Query rows per head in a block of `heads` heads: kBlockRows in all, a
// multiple of kRowGroup. (The K tile's transposition and the per-tile
// bookkeeping are shared by all of a block's rows: 64 rows run 1.3x faster
// than 16 at L4096 D128.)
constexpr int64_t query_tile_for(int64_t heads) { return kBlockRows / heads / kRowGroup * kRowGroup; }
static_assert(query_tile_for(kHeadTile) >= kRowGroup);

// One row's step of the streaming softmax over one tile; s holds the row's
// logits (tile_logits). False when nothing is visible to the row yet and it
// has no sink: its state is kept as it is, since exp(-inf - (-inf)) would be
// NaN. Otherwise s becomes the weights exp(s - m_new), the row's max and sum
// move on, and alpha = exp(m_old - m_new) rescales its accumulator (0 on the
// row's first visible tile without a sink).
template <class T>
ATTNCHECK_INLINE bool softmax_step(T* __restrict s, T& max, T& sum, T& alpha) {
  const T most = tile_max(s);
  const T old_max = max;
  const T new_max = (most > old_max || most != most) ? most : old_max;
  if (new_max == -std::numeric_limits<T>::infinity()) return false;
  alpha = std::exp(old_max - new_max);
  tile_exp(s, new_max);  // invisible keys: exp(-inf) = 0
  sum = sum * alpha + tile_sum(s);
  max = new_max;
  return true;
}

// One block: the whole streaming pass over the keys its rows may see, then
// the normalised rows (and their lse) written to out.
template <class T>
ATTNCHECK_INLINE void query_block_body(const TypedCallV2<T>& c, const Block& blk, BlockScratch<T>& scratch) {
  const int64_t head_dim = c.head_dim, value_dim = c.value_dim;
  T* k_t = scratch.k_t.data();
  T* s = scratch.scores.data();
  RowState<T>& state = scratch.state;

  // Each row's keys by length, causal rule and window, and their union over
  // the block (the same for every head of it). Tiles outside the union are
  // invisible to the whole block and are never loaded.
  KeyRange ranges[kBlockRows];
  KeyRange block{std::numeric_limits<int64_t>::max(), 0};
  for (int64_t r = 0; r < blk.rows; ++r) {
    ranges[r] = c.key_range(blk.b, blk.i0 + r);
    if (ranges[r].empty()) continue;
    block.begin = std::min(block.begin, ranges[r].begin);
    block.end = std::max(block.end, ranges[r].end);
  }
  for (int64_t hh = 0; hh < blk.heads; ++hh)
    for (int64_t r = 0; r < blk.rows; ++r) {
      state.max[hh * blk.query_tile + r] = c.sink_of(blk.h0 + hh);  // -inf without sinks
      state.sum[hh * blk.query_tile + r] = c.sinks ? T(1) : T(0);
    }
  std::fill(state.acc.begin(), state.acc.begin() + blk.heads * blk.query_tile * value_dim, T(0));

  const int64_t first_tile = block.empty() ? block.end : block.begin - block.begin % kKeyTile;
  for (int64_t j0 = first_tile; j0 < block.end; j0 += kKeyTile) {
    // Keys past the block's end (the padding keys among them) are never loaded.
    const int64_t keys = std::min(kKeyTile, block.end - j0);
    if (keys < kKeyTile) std::fill(k_t, k_t + head_dim * kKeyTile, T(0));  // a full tile overwrites all of it
    for (int64_t jj = 0; jj < keys; ++jj) {
      const T* k = c.k.row(blk.b, blk.kv_head, j0 + jj);  // [head_dim]
      for (int64_t d = 0; d < head_dim; ++d) k_t[d * kKeyTile + jj] = k[d];
    }
    const T* v = c.v.row(blk.b, blk.kv_head, j0);  // `keys` rows of [value_dim], c.v.stride[2] apart

    // Every query head of the group against this one K and V tile, four
    // rows at a time: they share the loads of the K tile and of V.
    for (int64_t hh = 0; hh < blk.heads; ++hh) {
      const int64_t h = blk.h0 + hh;
      for (int64_t r0 = 0; r0 < blk.rows; r0 += kRowGroup) {
        const int64_t n = std::min(kRowGroup, blk.rows - r0), row0 = hh * blk.query_tile + r0;
        int64_t begin[kRowGroup], end[kRowGroup];
        bool any = false;
        for (int64_t t = 0; t < n; ++t) {
          begin[t] = std::clamp<int64_t>(ranges[r0 + t].begin - j0, 0, keys);
          end[t] = std::clamp<int64_t>(ranges[r0 + t].end - j0, 0, keys);
          any |= begin[t] < end[t];
        }
        if (!any) continue;  // none of these rows' keys is in this tile
        if (n == kRowGroup) {
          tile_dot_rows<kRowGroup>(c.q.row(blk.b, h, blk.i0 + r0), c.q.stride[2], k_t, head_dim, s);
        } else {
          for (int64_t t = 0; t < n; ++t)
            tile_dot_rows<1>(c.q.row(blk.b, h, blk.i0 + r0 + t), 0, k_t, head_dim, s + t * kKeyTile);
        }
        T alpha[kRowGroup];
        int64_t live = 0;
        bool stepped[kRowGroup] = {};
        for (int64_t t = 0; t < n; ++t) {
          if (begin[t] >= end[t]) continue;  // none of the row's keys is in this tile
          T* st = s + t * kKeyTile;
          tile_logits(c, blk.b, h, blk.i0 + r0 + t, j0, begin[t], end[t], st);
          stepped[t] = softmax_step(st, state.max[row0 + t], state.sum[row0 + t], alpha[t]);
          live += stepped[t];
        }
        const int64_t v_row = c.v.stride[2];
        if (live == kRowGroup) {
          tile_accumulate_rows<kRowGroup>(state.acc.data() + row0 * value_dim, alpha, s, v, v_row, keys, value_dim);
        } else {
          for (int64_t t = 0; t < n; ++t)
            if (stepped[t])
              tile_accumulate_rows<1>(state.acc.data() + (row0 + t) * value_dim, alpha + t, s + t * kKeyTile, v,
                                      v_row, keys, value_dim);
        }
      }
    }
  }

  // Normalise: out = acc / l and lse = m + log(l). A row that never saw a key
  // has l = 0 without a sink (out 0, lse -inf) and l = 1, m = s, acc = 0 with
  // one (out 0, lse s). Only the block's rows are written: padding rows never
  // make a block.
  for (int64_t hh = 0; hh < blk.heads; ++hh) {
    const int64_t h = blk.h0 + hh;
    float* lse = c.lse_row(blk.b, h);  // [q_len] or nullptr
    for (int64_t r = 0; r < blk.rows; ++r) {
      const int64_t i = blk.i0 + r, row = hh * blk.query_tile + r;
      const T* acc = state.acc.data() + row * value_dim;
      T* o = c.out.row(blk.b, h, i);  // [value_dim]
      const T l = state.sum[row];
      if (l > 0 || l != l) {  // a NaN sum stays NaN: it came from a NaN the row can see
        for (int64_t col = 0; col < value_dim; ++col) o[col] = acc[col] / l;
        if (lse) lse[i] = static_cast<float>(state.max[row] + std::log(l));
      } else {
        std::fill(o, o + value_dim, T(0));
        if (lse) lse[i] = -std::numeric_limits<float>::infinity();
      }
    }
  }
}

// The block in the build of its loops that this CPU runs (vector_isa.h).
template <class T>
void query_block(const TypedCallV2<T>& c, const Block& blk, BlockScratch<T>& scratch) {
  run_in_vector_build([&](auto) __attribute__((always_inline)) { query_block_body(c, blk, scratch); });
}

template <class T>
void online_attention(const TypedCallV2<T>& c) {
  // Items: (batch, kv head, chunk of its query heads, query block), blocks
  // counted over the full q_len (a block at or past its batch's Lq is all
  // padding and does nothing). Under a causal rule late blocks see more keys
  // than early ones, and parallel_for hands out contiguous ranges; so within
  // a head chunk, item n computes block n/2 for even n and block
  // (blocks - 1 - n/2) for odd n, which pairs a cheap block with a dear one
  // in every range.
  const int64_t group = c.group(), chunk = std::min(group, kHeadTile);
  const int64_t query_tile = query_tile_for(chunk);
  const int64_t blocks = (c.q_len + query_tile - 1) / query_tile;
  const int64_t chunks = (group + chunk - 1) / chunk;  // per kv head
  const double flop_per_item = 2.0 * static_cast<double>(chunk * query_tile * c.kv_len) *
                               static_cast<double>(c.head_dim + c.value_dim);  // dense; causal and windows do less
  parallel_for(c.batch * c.kv_heads * chunks * blocks, flop_per_item, [&](int64_t begin, int64_t end) {
    BlockScratch<T> scratch(c.head_dim, c.value_dim);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item % blocks, head_chunk = item / blocks;
      const int64_t block = n % 2 == 0 ? n / 2 : blocks - 1 - n / 2;
      const int64_t kv_bh = head_chunk / chunks, part = head_chunk % chunks;
      Block blk;
      blk.b = kv_bh / c.kv_heads;
      blk.kv_head = kv_bh % c.kv_heads;
      blk.h0 = blk.kv_head * group + part * chunk;
      blk.heads = std::min(chunk, group - part * chunk);
      blk.query_tile = query_tile;
      blk.i0 = block * query_tile;
      blk.rows = std::min(query_tile, c.q_len_of(blk.b) - blk.i0);
      if (blk.rows > 0) query_block(c, blk, scratch);
    }
  });
}

}  // namespace

int online_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len) {
  return dispatch_v2(call, err, err_len, [](const auto& c) { online_attention(c); });
}

int online_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  return dispatch_v3(call, err, err_len, [](const auto& c) { online_attention(c); });
}

int online_forward(const attncheck_call* call, char* err, size_t err_len) {
  return forward_v1_via_v2(call, err, err_len, online_forward_v2);
}

}  // namespace attncheck
