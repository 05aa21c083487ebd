#ifndef ATTNCHECK_PLUGIN_V3_H
#define ATTNCHECK_PLUGIN_V3_H

#include "plugin_v2.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATTNCHECK_ABI_VERSION_3 3u

/* Features version 3 adds. They share the word and the rules of version 2's bits: the checker
 * only sends a call that uses a declared feature, every field of an undeclared feature holds
 * its neutral value, and ATTNCHECK_UNSUPPORTED stays the answer for any finer limit. */
#define ATTNCHECK_FEATURE_PAGED        (1u << 11) /* K and V in a page pool, through block_table */
#define ATTNCHECK_FEATURE_PACKED       (1u << 12) /* cu_seqlens_q / cu_seqlens_k */
#define ATTNCHECK_FEATURE_KV_FORMATS   (1u << 13) /* k_format, v_format other than DTYPE; scales */
#define ATTNCHECK_FEATURE_ALIBI_BATCH  (1u << 14) /* alibi_batch_stride: slopes per (batch, head) */
#define ATTNCHECK_FEATURE_V_VIEW_OF_K  (1u << 15) /* v is k's first value_dim channels (MLA) */
#define ATTNCHECK_FEATURE_BROADCAST_KV (1u << 16) /* stride 0 on k's and v's batch and head axes */

/* Declared departures from exact arithmetic. The checker widens its bound by exactly what each
 * admits, only in the calls it names; a kernel need not use what it declares. In such a call
 * every query element is finite and below 2^15 in magnitude. */
#define ATTNCHECK_NUMERICS_Q_AS_Q8_0    (1u << 0)
/* With K in Q8_0 or Q4_0, q may be rounded to ggml q8_0 blocks before the dot products (ggml's
 * CPU path converts q to K's vec_dot_type, ggml-cuda quantizes q to q8_1): in each block of 32
 * channels of a query row, with d = max |q_c| / 127 over the block, q_c becomes n_c * d', n_c an
 * integer within 1/2 + 2^-12 of q_c / d, d' = d or d rounded to binary16, each up to binary32
 * rounding. The checker then allows each query element an error of (9/16) d + 2^-18. */
#define ATTNCHECK_NUMERICS_KV_PRECISION (1u << 1)
/* With dtype F32 and K or V in F16, BF16, Q8_0 or Q4_0, the kernel may round q, the keys and
 * values, the logits and the weights to that storage's precision (binary16 for F16, Q8_0 and
 * Q4_0, bfloat16 for BF16) and form each q.k dot product in it; the sums over keys (the
 * softmax's denominator and P.V) stay in binary32 or finer. The checker widens its bound by
 * exactly those roundings, and keeps keys, values and every partial sum of |q_c k_c| below 2^15. */

/* What a plugin asks to be held to beyond agreement within the bound. The two calls of each
 * comparison run in the same plugin process. */
#define ATTNCHECK_PROMISE_DETERMINISTIC          (1u << 0)
/* Two forward calls that differ only in buffer addresses and in bytes that must not influence
 * anything write bit-identical out and lse. */
#define ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD (1u << 1)
/* The same for dq, dk and dv of two backward calls. */
#define ATTNCHECK_PROMISE_BATCH_INVARIANT        (1u << 2)
/* The out rows and lse of sequence b are bit-identical between two forward calls that give b
 * the same inputs (its query rows, keys and values, Lq, Lk, mask and bias entries, slopes,
 * sinks and scales) and agree in dtype, formats, heads, kv_heads, head_dim, value_dim,
 * page_size, causal, window, scale, softcap, features in use and every stride, whatever else
 * differs: batch, the other sequences, b's place in the batch, in the packed buffers and in the
 * page pool, q_len, kv_len, total_q, total_k, num_pages and max_pages_per_seq. */

/* How K and V are stored. A stored element stands for its real value, exactly:
 *   DTYPE     the call's dtype, as in version 2.
 *   F16, BF16 IEEE binary16 / bfloat16 in a uint16_t; only with dtype F32 (ggml's f16 cache).
 *   FP8_E4M3  OCP E4M3 ("e4m3fn"): bias 7, subnormals m/8 * 2^-6, no infinities, 0x7F and 0xFF
 *             NaN, largest 448. real = value * scale.
 *   FP8_E5M2  OCP E5M2: bias 15, IEEE-like (0x7C infinity, above it NaN), largest 57344.
 *             real = value * scale.
 *   INT8      int8_t code c in [-128, 127]. real = c * scale.
 *   INT4      byte m of a row holds channel 2m in bits 0-3 and channel 2m+1 in bits 4-7 (ONNX
 *             Runtime). real = (nibble - 8) * scale.
 *   Q8_0      ggml block_q8_0 {uint16_t d; int8_t qs[32];}, 34 bytes, d binary16. Channel
 *             32m+j of a row is qs[j] * d of block m.
 *   Q4_0      ggml block_q4_0 {uint16_t d; uint8_t qs[16];}, 18 bytes. Channel 32m+j is
 *             ((qs[j] & 15) - 8) * d and channel 32m+16+j is ((qs[j] >> 4) - 8) * d (halves,
 *             not interleaved).
 * Every live element and every scale is finite; NaN and infinity codes appear only in bytes
 * that must not influence anything. Attention is version 2's, computed over these real keys
 * and values with q in the call's dtype. Scaled and block formats come with dtype F32, F16 or
 * BF16; K and V may differ in format.
 *
 * Units. A view in a format other than DTYPE counts its strides in units: one uint16_t for F16
 * and BF16, one byte for FP8_E4M3, FP8_E5M2, INT8 and INT4 (two channels in INT4), one block
 * for Q8_0 and Q4_0 (32 channels). stride[3] is 1; head_dim (value_dim for v) is a multiple of
 * the channels in a unit; a unit of F16, BF16, Q8_0 or Q4_0 starts at an even address. */
typedef enum attncheck_kv_format {
  ATTNCHECK_KV_DTYPE = 0,     /* the call's dtype (neutral) */
  ATTNCHECK_KV_F16 = 1,       /* binary16, unscaled; dtype F32 only */
  ATTNCHECK_KV_BF16 = 2,      /* bfloat16, unscaled; dtype F32 only */
  ATTNCHECK_KV_FP8_E4M3 = 3,  /* OCP e4m3fn, times a scale */
  ATTNCHECK_KV_FP8_E5M2 = 4,  /* OCP e5m2, times a scale */
  ATTNCHECK_KV_INT8 = 5,      /* int8, times a scale */
  ATTNCHECK_KV_INT4 = 6,      /* two per byte, even channel low, nibble - 8, times a scale */
  ATTNCHECK_KV_Q8_0 = 7,      /* ggml block_q8_0 */
  ATTNCHECK_KV_Q4_0 = 8,      /* ggml block_q4_0 */
} attncheck_kv_format;

/* The float scale of a scaled format (FP8_E4M3, FP8_E5M2, INT8, INT4): the scale of channel c of
 * kv head h for batch entry b is data[b*stride[0] + h*stride[1] + c*stride[2]]. Strides are
 * >= 0 and 0 broadcasts: per tensor (0, 0, 0), per kv head (0, s, 0), per (batch, kv head)
 * (s0, s1, 0) like FlashAttention-3's descale, per (kv head, channel) (0, s1, 1) like ONNX
 * Runtime's per-channel scale. Every scale is finite and > 0. data is NULL for other formats. */
typedef struct attncheck_scale {
  const float *data;
  int64_t stride[3];
} attncheck_scale;

/* One forward call: version 2's call, then the fields version 3 adds. With every added field
 * neutral, `v2` alone is a version-2 call with version 2's meaning.
 *
 * Slots. Batch entry b (a sequence) owns a slot of query rows and a slot of keys:
 *   query rows  version 2: rows 0 .. q_len-1 of batch b.
 *               cu_seqlens_q: packed rows cu_seqlens_q[b] .. cu_seqlens_q[b+1]-1 of q and out
 *               (and of dout and dq).
 *   keys        version 2: rows 0 .. kv_len-1 of batch b.
 *               cu_seqlens_k: packed rows cu_seqlens_k[b] .. cu_seqlens_k[b+1]-1 of k and v
 *               (and of dk and dv).
 *               block_table: key t is slot t % page_size of page
 *               block_table[b*max_pages_per_seq + t/page_size].
 * Lq = q_lens ? q_lens[b] : the length of b's query slot; Lk = kv_lens ? kv_lens[b] : the length
 * of b's key slot (kv_len when paged). Rows i < Lq and keys j < Lk exist, counted from the start
 * of the slot, and everything version 2 says about lengths, visibility (each sequence aligned
 * to its own bottom right), logits and outputs holds unchanged. mask, bias and lse keep their
 * version-2 shapes, indexed by (b, h, i, j) and (b, h, i).
 *
 * Packed. cu_seqlens_q and cu_seqlens_k are int32 [batch + 1]: cu[0] = 0, cu[b] <= cu[b+1] (an
 * empty sequence is allowed), cu[batch] <= total_q (total_k), and every slot is at most q_len
 * (kv_len) long. A packed view has no batch axis: row r, head h, channel c is at
 * data + h*stride[1] + r*stride[2] + c, and stride[0] is 0. Dense is [total][heads][dim]. Rows
 * cu[batch] .. total-1 are slack.
 *
 * Paged. block_table is int32 [batch][max_pages_per_seq], dense. k and v view a pool of
 * num_pages pages of page_size keys: axis 0 of their views is the page and axis 2 the slot, so
 * (page p, kv head h, slot s, channel c) is at data + p*stride[0] + h*stride[1] + s*stride[2]
 * + c. Dense is [num_pages][page_size][kv_heads][dim]. Sequence b's keys are named by table
 * entries 0 .. ceil(Lk/page_size)-1; the entries past them must not influence anything. Every
 * entry is in [0, num_pages); Lk <= kv_len <= max_pages_per_seq * page_size. Pages may alias: a
 * page may appear in several rows of the table and more than once in a row. cu_seqlens_k is
 * NULL when paged.
 *
 * Dead bytes. A page slot is live when some sequence reads it as a key j < Lk; a packed row is
 * live when it holds a row i < Lq or a key j < Lk of some sequence. Every other byte of an input
 * allocation (padding, slack rows, dead slots, pages no sequence reads, gaps) may hold any bits,
 * NaN included, and must not influence anything; in an output allocation it is left as it is.
 *
 * ALiBi per (batch, head). The slope of query head h in batch entry b is
 * v2.alibi_slopes[b*alibi_batch_stride + h]; the stride is 0 (version 2's [heads]) or >= heads.
 *
 * V as a view of K (MLA). With V_VIEW_OF_K the checker also sends calls where v.data == k.data
 * with k's strides, value_dim <= head_dim, v_format == k_format and v_scale == k_scale: the
 * values are the first value_dim channels of the keys. v is then not dense, even without
 * STRIDES.
 *
 * Broadcast. With BROADCAST_KV the views of k and v (not paged) may have stride 0 on axes 0 and
 * 1: a tensor expanded over batch entries or heads. Gradient views never do. */
typedef struct attncheck_call_v3 {
  attncheck_call_v2 v2;               /* version 2's call */
  const int32_t *cu_seqlens_q;        /* [batch + 1] or NULL (neutral: NULL) */
  const int32_t *cu_seqlens_k;        /* [batch + 1] or NULL (neutral: NULL) */
  int64_t total_q, total_k;           /* rows of the packed buffers (neutral: 0) */
  const int32_t *block_table;         /* [batch][max_pages_per_seq] or NULL (neutral: NULL) */
  int64_t max_pages_per_seq, num_pages, page_size;  /* (neutral: 0) */
  attncheck_kv_format k_format, v_format;            /* (neutral: ATTNCHECK_KV_DTYPE) */
  attncheck_scale k_scale, v_scale;   /* scaled formats only (neutral: data NULL) */
  int64_t alibi_batch_stride;         /* (neutral: 0) */
} attncheck_call_v3;

/* backward is called only for calls that are not paged and whose K and V are DTYPE. Packed calls
 * reach it: dout and dq are packed like q and out, dk and dv like k and v, and their slack and
 * padding rows are left as they are. Otherwise exactly as in version 2. */
typedef struct attncheck_impl_v3 {
  uint32_t abi_version;        /* ATTNCHECK_ABI_VERSION_3 */
  uint32_t features;           /* ATTNCHECK_FEATURE_* bits of versions 2 and 3 */
  uint32_t kv_formats;         /* with KV_FORMATS: bit (1u << f) per attncheck_kv_format f offered */
  uint32_t numerics;           /* ATTNCHECK_NUMERICS_* bits (neutral: 0) */
  uint32_t promises;           /* ATTNCHECK_PROMISE_* bits (neutral: 0) */
  const char *name;
  int (*forward)(const attncheck_call_v3 *call, char *err, size_t err_len);
  int (*backward)(const attncheck_call_v3 *call, const attncheck_grad *grad,
                  char *err, size_t err_len);  /* NULL: no gradients */
} attncheck_impl_v3;

/* The symbol a version-3 plugin exports. */
const attncheck_impl_v3 *attncheck_plugin_v3(void);

#ifdef __cplusplus
}
#endif

#endif
