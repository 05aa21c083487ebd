// A Problem is one forward call: the currency every driver trades in.
// Generators make it, fuzzers decode it, case files store it, implementations
// (built-in or plugin) receive it through the ABI.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "problem/dtype.h"
#include "problem/kv_format.h"
#include "problem/kv_scale.h"
#include "problem/visibility.h"
#include "attncheck/plugin_v3.h"

namespace attncheck {

enum class Causal { none = ATTNCHECK_CAUSAL_NONE, top_left = ATTNCHECK_CAUSAL_TOP_LEFT,
                    bottom_right = ATTNCHECK_CAUSAL_BOTTOM_RIGHT };

std::string_view causal_name(Causal c);  // "none", "top_left", "bottom_right"

// Extents of one call. kv_heads is last so that six-value initialisers
// ({batch, heads, q_len, kv_len, head_dim, value_dim}) keep meaning what they
// did; 0 there means "as many as heads" and make_problem() writes it out.
// Query head h reads kv head h / (heads / kv_heads).
struct Shape {
  int64_t batch = 1, heads = 1, q_len = 1, kv_len = 1, head_dim = 1, value_dim = 1;
  int64_t kv_heads = 0;

  int64_t kv_head_count() const { return kv_heads > 0 ? kv_heads : heads; }
  int64_t q_size() const { return batch * heads * q_len * head_dim; }
  int64_t k_size() const { return batch * kv_head_count() * kv_len * head_dim; }
  int64_t v_size() const { return batch * kv_head_count() * kv_len * value_dim; }
  int64_t mask_size() const { return batch * heads * q_len * kv_len; }
  int64_t out_size() const { return batch * heads * q_len * value_dim; }
  int64_t rows() const { return batch * heads * q_len; }  // lse's size
  // Every member (problem_fields.h lists them), kv_heads as kv_head_count():
  // 0 and heads are the same shape.
  bool operator==(const Shape& o) const;
};

// Which of the axes [batch][heads][q_len] a mask or a bias varies along. An
// axis it does not vary along is broadcast: stored once here, sent with
// stride 0 through ABI v2 (and expanded for v1, which has no strides).
struct Broadcast {
  bool per_batch = true, per_head = true, per_row = true;
  bool full() const { return per_batch && per_head && per_row; }
  bool operator==(const Broadcast&) const = default;
  // Elements of a [batch][heads][q_len][kv_len] tensor stored this way.
  int64_t size(const Shape& s) const {
    return (per_batch ? s.batch : 1) * (per_head ? s.heads : 1) * (per_row ? s.q_len : 1) * s.kv_len;
  }
  // Offset of element (b, h, i, j).
  int64_t at(const Shape& s, int64_t b, int64_t h, int64_t i, int64_t j) const {
    const int64_t bb = per_batch ? b : 0, hh = per_head ? h : 0, ii = per_row ? i : 0;
    return ((bb * (per_head ? s.heads : 1) + hh) * (per_row ? s.q_len : 1) + ii) * s.kv_len + j;
  }
};

// How one 4-d tensor [batch][head][row][col] lies in memory for an ABI v2
// call. `order` lists the axes batch (0), head (1) and row (2) from outermost
// to innermost; col is always innermost (stride 1). `gap[a]` is the number of
// unused elements after each step of axis a (between rows, heads, batches):
// gaps in outputs are guard bytes, gaps in inputs hold garbage.
//   dense BHSD: order {0, 1, 2}, gaps 0;  FlashAttention's BSHD: order {0, 2, 1}.
// A v1 call is always dense BHSD.
struct TensorLayout {
  std::array<uint8_t, 3> order{0, 1, 2};
  std::array<int64_t, 3> gap{0, 0, 0};

  bool dense_bhsd() const { return order == std::array<uint8_t, 3>{0, 1, 2} && gap == std::array<int64_t, 3>{0, 0, 0}; }
  bool valid() const;  // order is a permutation of {0, 1, 2} and every gap >= 0
  // Element strides for extents {batch, heads, rows, cols}; stride[3] == 1.
  std::array<int64_t, 4> strides(const std::array<int64_t, 4>& extents) const;
  // Elements from the first element to one past the last (what to allocate).
  int64_t span(const std::array<int64_t, 4>& extents) const;
  bool operator==(const TensorLayout&) const = default;
};

// The layouts of a call's views; dout, dq, dk and dv are used by backward
// problems only (dout and dq have out's and q's extents, dk and dv k's and v's).
struct ViewLayouts {
  TensorLayout q, k, v, out;
  TensorLayout dout, dq, dk, dv;
  bool forward_dense() const { return q.dense_bhsd() && k.dense_bhsd() && v.dense_bhsd() && out.dense_bhsd(); }
  bool gradients_dense() const { return dout.dense_bhsd() && dq.dense_bhsd() && dk.dense_bhsd() && dv.dense_bhsd(); }
  bool all_dense() const { return forward_dense() && gradients_dense(); }
  bool operator==(const ViewLayouts&) const = default;
};

// The larger of each extent: what a set of judged cases covered.
inline Shape largest_extents(const Shape& a, const Shape& b) {
  auto m = [](int64_t x, int64_t y) { return x > y ? x : y; };
  return {m(a.batch, b.batch),   m(a.heads, b.heads),       m(a.q_len, b.q_len),
          m(a.kv_len, b.kv_len), m(a.head_dim, b.head_dim), m(a.value_dim, b.value_dim),
          m(a.kv_head_count(), b.kv_head_count())};
}

// Feature bits of ABI v2 (ATTNCHECK_FEATURE_*), as the Problem uses them.
using FeatureBits = uint32_t;
// What a v1 call can express: masks and causal rules, nothing else.
inline constexpr FeatureBits kV1Features = ATTNCHECK_FEATURE_MASK | ATTNCHECK_FEATURE_CAUSAL;
inline constexpr FeatureBits kAllFeatures = (1u << 11) - 1;
// ABI v3's packed batches (cu_seqlens_q/k): the one v3 feature a Problem
// carries so far. Its bit (12) is the ABI's, beside the v2 bits.
inline constexpr FeatureBits kPackedFeature = ATTNCHECK_FEATURE_PACKED;
// ABI v3's paged keys (block_table): bit 11, the ABI's. Like kPackedFeature,
// outside kEveryFeature: only laws whose features name it see paged problems.
inline constexpr FeatureBits kPagedFeature = ATTNCHECK_FEATURE_PAGED;
// ABI v3's stored K and V formats (k_format, v_format, their scales): bit 13,
// the ABI's, outside kEveryFeature like the two above.
inline constexpr FeatureBits kKvFormatsFeature = ATTNCHECK_FEATURE_KV_FORMATS;
// ABI v3's V as a view of K (MLA): bit 15, the ABI's, outside kEveryFeature too.
inline constexpr FeatureBits kVViewFeature = ATTNCHECK_FEATURE_V_VIEW_OF_K;
// ABI v3's ALiBi slopes per (batch, head) (alibi_batch_stride): bit 14, the
// ABI's, outside kEveryFeature like the three above.
inline constexpr FeatureBits kAlibiBatchFeature = ATTNCHECK_FEATURE_ALIBI_BATCH;
// Not an ABI bit: a problem with a dout is a backward problem (the forward
// call, then ABI v2's `backward` on the implementation's own out and lse), and
// an implementation "declares" it by having a backward. Keeping it among the
// feature bits lets laws, generators and the runner treat gradients as they
// treat every other feature: drawn only for implementations that offer it,
// skipped (never passed) for those that do not.
inline constexpr FeatureBits kBackwardFeature = 1u << 16;
// ABI v3's K and V expanded over batch entries or kv heads (BROADCAST_KV): not
// the ABI's bit 16, which is kBackwardFeature here, but bit 17; the plugin host
// and the C++ API take the ABI's bit as this one. Outside kEveryFeature like
// the other v3 bits. kLastFeatureBit: the highest bit a loop over features visits.
inline constexpr FeatureBits kBroadcastKvFeature = 1u << 17;
inline constexpr FeatureBits kLastFeatureBit = kBroadcastKvFeature;
// Every bit a problem of version 2 may use: the ABI's and the backward bit.
// (kPackedFeature is not among them: a law takes packed problems only when its
// features name it, so the laws written before packing never see one.)
inline constexpr FeatureBits kEveryFeature = kAllFeatures | kBackwardFeature;
// "mask", "gqa", ...: the lower-case name after ATTNCHECK_FEATURE_; "" when not one bit.
std::string_view feature_name(FeatureBits one_bit);
// "mask,causal,gqa" (or "none").
std::string feature_list(FeatureBits bits);

// One forward call, in the semantics of ABI v2 (docs/abi/plugin-abi-v2.md):
// every field beyond v1 holds its neutral value unless the problem uses it.
// Every member is listed in problem/problem_fields.h, from which its case
// file, case hash, wires and memo keys are derived: a member added here and
// not there does not compile.
struct Problem {
  DType dtype = DType::f32;
  Shape shape;
  Causal causal = Causal::none;
  // NaN asks the implementation for its default, which must be 1/sqrt(head_dim).
  double scale = std::numeric_limits<double>::quiet_NaN();
  // Logically row-major, values exactly representable in `dtype` (how they
  // are laid out for a call is `layouts`):
  //   q [batch][heads][q_len][head_dim], k [batch][kv_heads][kv_len][head_dim],
  //   v [batch][kv_heads][kv_len][value_dim].
  std::vector<double> q, k, v;
  // [batch][heads][q_len][kv_len] as `mask_broadcast` stores it, nonzero = may
  // attend; empty = no mask.
  std::vector<uint8_t> mask;
  Broadcast mask_broadcast;

  // --- ABI v2 (neutral values: not used) ---
  // [batch] each, 0 <= q_lens[b] <= q_len, 0 <= kv_lens[b] <= kv_len; empty = the full extents.
  // Rows i >= q_lens[b] and keys j >= kv_lens[b] are padding: their tensor
  // values here are what the call sends there (any bits, NaN included) and
  // must change nothing.
  std::vector<int32_t> q_lens, kv_lens;
  int64_t window_left = -1, window_right = -1;  // < 0: unbounded
  double softcap = 0;                           // 0: none, else finite > 0
  // [batch][heads][q_len][kv_len] as `bias_broadcast` stores it, values in
  // `dtype` or -inf (hides the key); empty = no bias.
  std::vector<double> bias;
  Broadcast bias_broadcast;
  // [heads], values in float; empty = none. [batch][heads] when
  // alibi_batch_stride is not 0 (ABI v3's ALIBI_BATCH; slope_of reads both).
  std::vector<double> alibi_slopes;
  std::vector<double> sinks;         // [heads], values in float; empty = none
  bool lse_requested = false;        // the call passes an lse output
  ViewLayouts layouts;               // dense BHSD unless STRIDES is used

  // --- Gradients (a backward problem) ---
  // [batch][heads][q_len][value_dim] (out's shape), values in `dtype`; padding
  // rows hold what the call sends there. Empty: a forward problem. A backward
  // problem asks for the gradients of sum(out * dout) with respect to q, k, v.
  std::vector<double> dout;

  // --- ABI v3: packed batches (docs/abi/plugin-abi-v3.md, "Packed batches") ---
  // cu_seqlens_q: int32 [batch + 1] prefix sums, cu[0] = 0, cu[b] <= cu[b+1],
  // every slot cu[b+1] - cu[b] <= q_len, cu[batch] <= total_q; empty = q and
  // out padded as in v2. Sequence b's slot holds n_q = cu[b+1] - cu[b] rows:
  // the tensors above keep their padded shape [batch][heads][q_len][dim], and
  // rows n_q .. q_len-1 of batch b exist nowhere in the call (Lq <= n_q, so
  // they are never live). The call's q and out are [total_q][heads][dim]:
  // row i of sequence b is packed row cu[b] + i; rows cu[batch] .. total_q-1
  // are slack (poisoned in inputs, guarded in outputs). Same for keys with
  // cu_seqlens_k, total_k, k and v (kv_len). total_* is 0 exactly when its
  // side is not packed. A packed side's views are dense [total][heads][dim].
  std::vector<int32_t> cu_seqlens_q, cu_seqlens_k;
  int64_t total_q = 0, total_k = 0;

  // --- ABI v3: paged keys (docs/abi/plugin-abi-v3.md, "Paged caches") ---
  // block_table: int32 [batch][max_pages_per_seq], each entry in [0,
  // num_pages); empty = keys not paged (then the four numbers below are 0).
  // k and v keep their logical shape [batch][kv_heads][kv_len][dim] here: key
  // j of sequence b is slot j % page_size of page block_table[b][j /
  // page_size] of the call's pool [num_pages][page_size][kv_heads][dim], for
  // j < Lk (kv_lens[b], else kv_len). Two live keys that share a slot
  // (aliased pages) hold the same bits in k and v, so the pool is well
  // defined; keys past Lk exist nowhere in the call, and every slot no
  // sequence reads live (dead slots, unread pages, the pages behind table
  // entries past ceil(Lk / page_size)) holds page_poison's value. Not with
  // packed keys or a backward problem. layouts.k and .v order the pool's axes
  // (page, slot, kv head), dense NHD by default (call/paged_pool.h).
  std::vector<int32_t> block_table;
  int64_t max_pages_per_seq = 0, num_pages = 0, page_size = 0;
  // What the pool's dead slots hold: kPagePoisonNaN (0), +inf (1), -inf (2),
  // a huge finite value (3: the dtype's largest / 4). page_poison_value().
  int64_t page_poison = 0;

  // --- ABI v3: stored formats of K and V (docs/abi/plugin-abi-v3.md, "Stored
  // formats of K and V"; docs/kv-formats.md) ---
  // k and v above hold the REAL values (each exact in binary64, not in
  // general in `dtype`), so the oracle reads them as it reads any keys; the
  // codes the call sends are derived from them and the scales below by exact
  // division (problem/kv_storage.h), and a problem whose real values are not
  // exactly code * scale of its format is inconsistent. Holding the real
  // values (not the codes) keeps the oracle exact without a decoder and a
  // case file readable; holding the scales (not leaving them to a quantizer)
  // keeps the codes the generator drew. KvFormat::dtype: as version 2.
  //   k_scales, scaled formats (fp8, int8, int4): the dense float32 array of
  //     k_scale_granularity (kv_scale.h: [1], [kv_heads], [batch][kv_heads],
  //     [kv_heads][head_dim]); block formats (q8_0, q4_0): the binary16 d of
  //     every block, [batch][kv_heads][kv_len][head_dim / 32]; otherwise empty.
  //   v_scales likewise over value_dim.
  // Keys past Lk exist nowhere in the call: their stored rows hold the codes of
  // k's and v's values there when those are codes of the format (the dead
  // rows' d from the scales), else poison codes (NaN codes, NaN d; the extreme
  // code for int8/int4); drawn cases hold NaN there (problem/kv_storage.h).
  // Only with padded, dense k and v (not packed, not paged, no k/v layouts)
  // and forward.
  KvFormat k_format = KvFormat::dtype, v_format = KvFormat::dtype;
  ScaleGranularity k_scale_granularity = ScaleGranularity::per_tensor,
                   v_scale_granularity = ScaleGranularity::per_tensor;
  std::vector<double> k_scales, v_scales;

  // --- ABI v3: ALiBi slopes per (batch, head) (docs/abi/plugin-abi-v3.md,
  // "ALiBi per (batch, head)") ---
  // 0: alibi_slopes is version 2's [heads]. Otherwise >= heads: alibi_slopes
  // holds [batch][heads] (dense here) and the call lays row b at
  // b * alibi_batch_stride floats, the stride - heads floats between rows
  // poisoned (bytes no slope is read from). Only with alibi_slopes.
  int64_t alibi_batch_stride = 0;

  // --- ABI v3: K and V expanded (docs/abi/plugin-abi-v3.md, "Broadcast K and V") ---
  // Which axes of k's (v's) view the call sends with stride 0: bit 0 the batch
  // axis (kKvBroadcastBatch: every entry reads entry 0's keys), bit 1 the kv-head
  // axis (kKvBroadcastHeads: every kv head reads head 0's). k and v above keep
  // their logical shape and hold equal values (bit for bit, padding keys too:
  // they are the same bytes) across each such axis; the call holds one slice.
  // Padded keys only (not packed, paged, stored in a format or a view of k),
  // forward only (gradient views never broadcast). problem/kv_broadcast.h.
  int64_t k_broadcast = 0, v_broadcast = 0;

  // --- ABI v3: declared numerics (docs/abi/plugin-abi-v3.md, "Declared numerics") ---
  // The ATTNCHECK_NUMERICS_* bits the implementation declares that apply to this
  // call (problem/kv_numerics.h: Q_AS_Q8_0 with K in Q8_0 or Q4_0, KV_PRECISION
  // with dtype f32 and K or V in F16, BF16, Q8_0 or Q4_0): the oracle's bound is
  // widened by exactly what they admit (docs/tolerance.md, "Declared numerics").
  // Not sent in the call (the ABI's call has no such field: the plugin knows
  // its own declaration). 0 (neutral) otherwise; written and hashed only when
  // not 0 (problem_fields.h), so every other case file keeps its bytes and name.
  int64_t numerics = 0;

  // --- ABI v3: V as a view of K (docs/abi/plugin-abi-v3.md, "V as a view of K") ---
  // true: the call's v is k's first value_dim channels (v.data == k.data,
  // v's strides are k's; with paging both read the same pool and table).
  // v above still holds V's values, [batch][kv_heads][kv_len][value_dim], and
  // they must equal k's first value_dim channels bit for bit (padding keys
  // too: they are the same bytes), so the oracle reads v as always; layouts.v
  // is layouts.k, value_dim <= head_dim, forward only (the backward of a view
  // is not laid out yet). In a stored format V shares K's format, granularity
  // and scale: v_scales are what V's view of k_scales reads (kv_storage.h
  // kv_view_v_scales). Written and hashed only when true (problem_fields.h).
  bool v_view_of_k = false;

  // The same call: every field (problem_fields.h lists them) equal, doubles
  // by their bits (a NaN scale equals a NaN scale of the same bits, -0 differs
  // from +0: a call that sends other bits is another call), the shape as
  // Shape compares it.
  bool operator==(const Problem& o) const;

  bool has_mask() const { return !mask.empty(); }
  bool has_bias() const { return !bias.empty(); }
  bool is_backward() const { return !dout.empty(); }
  bool packed_q() const { return !cu_seqlens_q.empty(); }
  bool packed_k() const { return !cu_seqlens_k.empty(); }
  bool packed() const { return packed_q() || packed_k(); }
  bool paged() const { return !block_table.empty(); }
  // K or V stored in a format other than the dtype.
  bool kv_formatted() const { return k_format != KvFormat::dtype || v_format != KvFormat::dtype; }
  // K or V expanded over batch entries or kv heads (stride 0 in the call).
  bool kv_broadcast() const { return k_broadcast != 0 || v_broadcast != 0; }
  // ALiBi slopes per (batch, head): alibi_slopes is [batch][heads].
  bool alibi_per_batch() const { return alibi_batch_stride != 0; }
  // The ALiBi slope of query head bh (= b * heads + h); slopes must be given.
  double slope_of(int64_t bh) const { return alibi_slopes[alibi_per_batch() ? bh : bh % shape.heads]; }
  // Pages sequence b reads: ceil(Lk / page_size) (paged problems only).
  int64_t pages_used_by(int64_t b) const { return (kv_len_of(b) + page_size - 1) / page_size; }
  // The page holding key j of sequence b (paged problems only).
  int64_t page_of(int64_t b, int64_t j) const { return block_table[b * max_pages_per_seq + j / page_size]; }
  // The length of b's query slot (n_q) and key slot (n_k): q_len and kv_len unpacked.
  int64_t q_slot_of(int64_t b) const { return packed_q() ? cu_seqlens_q[b + 1] - cu_seqlens_q[b] : shape.q_len; }
  int64_t kv_slot_of(int64_t b) const { return packed_k() ? cu_seqlens_k[b + 1] - cu_seqlens_k[b] : shape.kv_len; }
  // Every row (key) of the padded extents exists: no lengths, no packing.
  bool all_q_rows_live() const { return q_lens.empty() && !packed_q(); }
  bool all_keys_live() const { return kv_lens.empty() && !packed_k(); }
  // The ABI v2 features this problem uses (a v1 implementation can take it
  // only when this is within kV1Features).
  FeatureBits features() const;
  // The scale the exact computation uses (the default resolved).
  double effective_scale() const {
    return std::isnan(scale) ? 1.0 / std::sqrt(static_cast<double>(shape.head_dim)) : scale;
  }

  // Flat offsets; `bh` is b * heads + h (a query head), `kv_bh` is
  // b * kv_heads + kv head (see kv_of).
  int64_t q_at(int64_t bh, int64_t i, int64_t d) const { return (bh * shape.q_len + i) * shape.head_dim + d; }
  int64_t k_at(int64_t kv_bh, int64_t j, int64_t d) const { return (kv_bh * shape.kv_len + j) * shape.head_dim + d; }
  int64_t v_at(int64_t kv_bh, int64_t j, int64_t c) const { return (kv_bh * shape.kv_len + j) * shape.value_dim + c; }
  int64_t out_at(int64_t bh, int64_t i, int64_t c) const { return (bh * shape.q_len + i) * shape.value_dim + c; }
  int64_t mask_at(int64_t bh, int64_t i, int64_t j) const {
    return mask_broadcast.at(shape, bh / shape.heads, bh % shape.heads, i, j);
  }
  int64_t bias_at(int64_t bh, int64_t i, int64_t j) const {
    return bias_broadcast.at(shape, bh / shape.heads, bh % shape.heads, i, j);
  }
  // The kv head (as b * kv_heads + kv head) that query head bh reads.
  int64_t kv_of(int64_t bh) const {
    const int64_t kvh = shape.kv_head_count();
    return (bh / shape.heads) * kvh + (bh % shape.heads) / (shape.heads / kvh);
  }
  // Rows and keys that exist in batch b, Lq and Lk (the rest is padding):
  // q_lens[b] when given, else the slot's length (q_len when not packed).
  int64_t q_len_of(int64_t b) const { return q_lens.empty() ? q_slot_of(b) : q_lens[b]; }
  int64_t kv_len_of(int64_t b) const { return kv_lens.empty() ? kv_slot_of(b) : kv_lens[b]; }
  // Row i's diagonal d_i in batch b: the key the causal rule, windows and
  // ALiBi align to (i for top_left; i + Lk - Lq otherwise, bottom right).
  int64_t diagonal(int64_t b, int64_t i) const {
    return causal == Causal::top_left ? i : i + kv_len_of(b) - q_len_of(b);
  }

  // Number of leading keys the causal rule leaves to row i without lengths
  // (problem/visibility.h); may be <= 0 or >= kv_len.
  int64_t causal_key_end(int64_t i) const {
    return attncheck::causal_key_end(static_cast<int>(causal), shape.q_len, shape.kv_len, i);
  }
  // The causal rule alone allows query i of batch b to see key j.
  bool causal_allows(int64_t i, int64_t j, int64_t b = 0) const {
    return causal == Causal::none || j <= diagonal(b, i);
  }
  // The window alone.
  bool window_allows(int64_t b, int64_t i, int64_t j) const {
    const int64_t d = diagonal(b, i);
    return (window_left < 0 || j >= d - window_left) && (window_right < 0 || j <= d + window_right);
  }
  // The mask alone (no mask: every key).
  bool mask_allows(int64_t bh, int64_t i, int64_t j) const { return mask.empty() || mask[mask_at(bh, i, j)] != 0; }
  // Query i of head bh sees key j: both exist, and the causal rule, the
  // window, the mask and the bias (not -inf) all allow it.
  bool visible(int64_t bh, int64_t i, int64_t j) const {
    const int64_t b = bh / shape.heads;
    if (i >= q_len_of(b) || j >= kv_len_of(b)) return false;
    if (!causal_allows(i, j, b) || !window_allows(b, i, j) || !mask_allows(bh, i, j)) return false;
    return bias.empty() || bias[bias_at(bh, i, j)] != -std::numeric_limits<double>::infinity();
  }
  // Row i of batch bh / heads exists (is not padding).
  bool row_exists(int64_t bh, int64_t i) const { return i < q_len_of(bh / shape.heads); }
  // Query i of head bh sees at least one key.
  bool row_sees_any_key(int64_t bh, int64_t i) const;
  // The logit a visible key gets from its dot product (already scaled):
  // soft-cap, then bias, then ALiBi, in exact arithmetic (double here).
  double logit_from_score(int64_t bh, int64_t i, int64_t j, double scaled_dot) const;
  // The sink logit of head bh, or -inf without sinks.
  double sink_of(int64_t bh) const {
    return sinks.empty() ? -std::numeric_limits<double>::infinity() : sinks[bh % shape.heads];
  }

  // Makes the mask (if any) full per batch, head and row, so that one entry
  // can be changed for one (b, h, i) alone. Same for the bias.
  void expand_mask();
  void expand_bias();

  // Sizes of every tensor agree with the shape and every extent is positive;
  // every v2 field is within the ABI's ranges. "" when consistent, else what is wrong.
  std::string inconsistency() const;

  // A short human-readable rendering: the header line, then the tensors when small.
  std::string describe(std::size_t max_elements = 64) const;
  // One line: dtype, shape, causal rule, scale, mask, and each v2 feature used.
  std::string header() const;
};

// Builds a zero-filled problem of the given shape (no mask).
Problem make_problem(DType dtype, const Shape& shape, Causal causal = Causal::none,
                     double scale = std::numeric_limits<double>::quiet_NaN());

// The value page_poison names for dtype t (NaN, +inf, -inf, or huge).
inline constexpr int64_t kPagePoisonNaN = 0, kPagePoisonCodes = 4;
double page_poison_value(DType t, int64_t page_poison);

// Rounds every tensor element to the problem's dtype (after a transformation
// that may have left the representable set).
void round_tensors(Problem& p);

}  // namespace attncheck
