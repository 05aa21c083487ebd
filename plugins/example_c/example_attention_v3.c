/* example_attention_v3: a correct attncheck plugin for ABI version 3, in plain C99.
 *
 * Copy this file to start a plugin against version 3 (attncheck/plugin_v3.h,
 * docs/abi/plugin-abi-v3.md). A version-3 call is a version-2 call followed by the
 * fields version 3 adds (packed batches, paged caches, stored K/V formats and their
 * scales, ALiBi slopes per batch entry), each with a neutral value; a plugin only
 * receives non-neutral values for the features it declares. This example declares
 * version 2's forward features and five version-3 features, packed batches (PACKED),
 * paged keys (PAGED), ALiBi slopes per batch entry (ALIBI_BATCH) and V as a view of K
 * (V_VIEW_OF_K), expanded K and V (BROADCAST_KV), and no format or
 * numerics bit: every call it gets is a version-2 call in `call->v2`, perhaps packed or
 * paged or with a row of slopes per batch entry, and it computes that call exactly as the
 * spec states it, one step per function, in double:
 *   - packed batches (PACKED): with cu_seqlens_q, q and out are [total_q][heads][dim]
 *     and row i of sequence b is packed row cu_seqlens_q[b] + i (stride[0] is 0); with
 *     cu_seqlens_k the same for k and v; a sequence's length is its slot's,
 *     cu[b+1] - cu[b], unless q_lens / kv_lens give a shorter one. Empty sequences are
 *     not computed, and slack rows past cu[batch] are neither read nor written;
 *   - paged keys (PAGED): with block_table, k and v view a pool of num_pages pages of
 *     page_size keys, and key j of sequence b is slot j % page_size of page
 *     block_table[b*max_pages_per_seq + j/page_size] (key_offset below); Lk is kv_lens[b]
 *     or kv_len. Only the first ceil(Lk/page_size) entries of a row are read, and of
 *     those pages only the slots of keys j < Lk: the rest of the pool (dead slots,
 *     other pages) may hold NaN, and pages may repeat (aliases need nothing);
 *   - ALiBi slopes per batch entry (ALIBI_BATCH): with alibi_batch_stride s > 0 the slope
 *     of query head h in batch entry b is alibi_slopes[b*s + h] (rows of s floats, the
 *     first heads of each read; FlashAttention-2's (batch, nheads) slopes); s = 0 is
 *     version 2's [heads];
 *   - V as a view of K (V_VIEW_OF_K, MLA): v may be k's first value_dim channels,
 *     v.data == k.data with k's strides (with paging, k's pool and table). Nothing to do:
 *     v is read through its own view, whatever memory it shares;
 *   - expanded K and V (BROADCAST_KV): k's and v's views may have stride 0 on axis 0
 *     (every batch entry reads the same keys) or axis 1 (every kv head does). Nothing to
 *     do either: every element is read through offset_of with the view's own strides (a
 *     kernel must never take a 0 stride for "contiguous" and recompute dense ones);
 *   - strided views of q, k, v, out (STRIDES); grouped-query heads (GQA);
 *   - per-sequence lengths: padding rows and keys never read, padding rows of out and
 *     lse never written (LENGTHS);
 *   - causal rules, windows and ALiBi aligned to the diagonal d_i (CAUSAL, WINDOW,
 *     ALIBI); the boolean mask and the additive bias through their strides (MASK, BIAS);
 *   - soft-capping (SOFTCAP), attention sinks (SINKS), the natural-log lse (LSE).
 * It takes f32 and f64 and answers ATTNCHECK_UNSUPPORTED to f16 and bf16 (a finer
 * limit: attncheck drops those dtypes and says so). It has no backward.
 *
 * It makes the two forward promises a plain loop keeps (ATTNCHECK_PROMISE_*): each row
 * sums over its own sequence's visible keys, first to last, in double, with scratch
 * written before it is read, so the result depends on nothing but that row's inputs:
 *   - DETERMINISTIC: not on the buffers' addresses, the padding or an earlier call;
 *   - BATCH_INVARIANT: not on the other sequences, the batch, b's place, q_len or kv_len.
 * attncheck holds it to both bit for bit (rerun_bit_identical,
 * batch_invariance). A kernel that splits its keys by the batch size or picks
 * a path by alignment must not declare them.
 *
 * What attncheck checks of it today: everything version 2 defines, as for a version-2
 * plugin, packed calls (packed_equals_padded, slack_inert_and_untouched,
 * empty_sequences), paged calls (matches_oracle, paged_equals_contiguous,
 * page_permutation_bit_identical, page_size_independence, dead_page_bytes_inert, unread_table_entries_inert,
 * page_alias_equals_copy), slopes per batch entry (alibi_batch_matches_alone), and its promises. A version-3 feature, format or numerics bit declared in
 * attncheck_impl_v3 is accepted (or refused, when the spec says so) but not yet judged
 * by any law; the reports then say "NOT CHECKED" (docs/plugins.md, "Version 3").
 *
 * Build (what plugins/CMakeLists.txt does):
 *   cc -std=c99 -O2 -shared -fPIC -I<attncheck>/include example_attention_v3.c \
 *      -o libexample_attention_v3.so -lm
 * Check it:
 *   attncheck check --plugin ./libexample_attention_v3.so
 *
 * Tensors (views: element (b, h, r, c) at data + b*s[0] + h*s[1] + r*s[2] + c*s[3],
 * counted in elements; mask and bias may have stride 0 on axes 0 to 2):
 *   q    [batch][heads][q_len][head_dim]       out [batch][heads][q_len][value_dim]
 *   k    [batch][kv_heads][kv_len][head_dim]   v   [batch][kv_heads][kv_len][value_dim]
 *        paged: [num_pages][kv_heads][page_size][dim] as views (page, kv head, slot, channel)
 *   mask [batch][heads][q_len][kv_len] uint8, nonzero = may attend (data NULL: none)
 *   bias [batch][heads][q_len][kv_len] in the call's dtype (data NULL: none)
 *   lse  [batch][heads][q_len] float, dense (NULL: not requested)
 *
 * Precision. Every element is widened to double and all arithmetic is done in double;
 * each result is rounded once, when stored in the call's dtype (lse in float). For f32
 * inputs the products are exact in double and the accumulated error, about n * 2^-53,
 * stays far below that one rounding; for f64, double is the storage precision, which the
 * checker's bound assumes. Softmax subtracts the row maximum (sink included) so that no
 * exp() overflows. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "attncheck/plugin_v3.h"

/* ---- what version 3 adds, and what this plugin sees of it ----------------------------- */

/* The plugin declares PACKED and PAGED and no other version-3 feature, so the checker
 * sends every other added field at its neutral value: K and V in the call's dtype with no
 * scales. Anything else is a caller that breaks the contract:
 * answered with an error (2) that names the field, never computed as if it were neutral.
 * Returns 1 when every such field is neutral and the packing and paging fields agree. */
static int added_fields_neutral(const attncheck_call_v3 *c, char *err, size_t err_len) {
  const char *field = NULL;
  const int paged_sizes = c->max_pages_per_seq > 0 && c->num_pages > 0 && c->page_size > 0;
  if (!c->cu_seqlens_q != !c->total_q || !c->cu_seqlens_k != !c->total_k) field = "total_q/total_k without cu_seqlens";
  else if (!c->block_table != !paged_sizes) field = "block_table without its page sizes (or sizes without it)";
  else if (c->block_table && c->cu_seqlens_k) field = "cu_seqlens_k with block_table (keys are packed or paged)";
  else if (c->k_format != ATTNCHECK_KV_DTYPE || c->v_format != ATTNCHECK_KV_DTYPE) field = "k_format/v_format";
  else if (c->k_scale.data || c->v_scale.data) field = "k_scale/v_scale";
  if (!field) return 1;
  snprintf(err, err_len, "%s: not a call this plugin's declaration (PACKED, PAGED, ALIBI_BATCH) allows", field);
  return 0;
}

/* ---- reading and writing elements of a view ------------------------------------------ */

/* Offset of element (b, h, r, c), in elements, in a view with `stride`. */
static int64_t offset_of(const int64_t stride[4], int64_t b, int64_t h, int64_t r, int64_t c) {
  return b * stride[0] + h * stride[1] + r * stride[2] + c * stride[3];
}

/* Element `at` of an f32 or f64 array, widened to double. */
static double load(const void *data, attncheck_dtype dtype, int64_t at) {
  return dtype == ATTNCHECK_F64 ? ((const double *)data)[at] : (double)((const float *)data)[at];
}

/* Stores x at element `at`, rounded once to the dtype. */
static void store(void *data, attncheck_dtype dtype, int64_t at, double x) {
  if (dtype == ATTNCHECK_F64) ((double *)data)[at] = x;
  else ((float *)data)[at] = (float)x;
}

/* ---- one query row's keys ------------------------------------------------------------- */

/* Query row i of query head h in batch b, with its sequence's lengths, its kv head and
 * its diagonal d_i (the key it aligns to: TOP_LEFT i, else bottom right i + Lk - Lq).
 * q_row is the row of the q and out views that holds it (i, or cu_seqlens_q[b] + i
 * packed) and k_row0 the row of the k and v views that holds key 0 (0, or
 * cu_seqlens_k[b] packed): a packed view's stride[0] is 0, so offset_of(stride, b, h,
 * q_row, c) is right for both forms. With paged keys, pages is b's row of block_table
 * and page_size its pages' keys (NULL and 0 otherwise). slopes is b's row of ALiBi slopes
 * (alibi_slopes + b*alibi_batch_stride: the slopes themselves when the stride is 0), NULL
 * without ALiBi. mask, bias and lse keep their (b, h, i, j) shapes. */
typedef struct row {
  int64_t b, h, i, kv_h, q_len, kv_len, diagonal, q_row, k_row0;
  const int32_t *pages;
  int64_t page_size;
  const float *slopes;
} row;

/* Offset of channel col of key j of row r's sequence, in elements, in the k or v view
 * with strides s (the kv head is r's):
 *   padded  key j is view row j of batch b:      b*s[0] + kv_h*s[1] + j*s[2] + col
 *   packed  it is buffer row cu_seqlens_k[b]+j:  kv_h*s[1] + (k_row0 + j)*s[2] + col (s[0] = 0)
 *   paged   slot j % page_size of page p = block_table[b*max_pages_per_seq + j/page_size]:
 *                                                p*s[0] + kv_h*s[1] + (j % page_size)*s[2] + col */
static int64_t key_offset(const int64_t s[4], const row *r, int64_t j, int64_t col) {
  if (r->pages) return offset_of(s, r->pages[j / r->page_size], r->kv_h, j % r->page_size, col);
  return offset_of(s, r->b, r->kv_h, r->k_row0 + j, col);
}

static row row_at(const attncheck_call_v3 *call, int64_t b, int64_t h, int64_t i, int64_t lq, int64_t lk) {
  const attncheck_call_v2 *c = &call->v2;
  row r;
  r.q_row = (call->cu_seqlens_q ? call->cu_seqlens_q[b] : 0) + i;
  r.k_row0 = call->cu_seqlens_k ? call->cu_seqlens_k[b] : 0;
  r.pages = call->block_table ? call->block_table + b * call->max_pages_per_seq : NULL;
  r.page_size = call->block_table ? call->page_size : 0;
  r.slopes = c->alibi_slopes ? c->alibi_slopes + b * call->alibi_batch_stride : NULL;
  r.b = b;
  r.h = h;
  r.i = i;
  r.kv_h = h / (c->heads / c->kv_heads); /* query head h reads kv head h / group */
  r.q_len = lq;
  r.kv_len = lk;
  r.diagonal = c->causal == ATTNCHECK_CAUSAL_TOP_LEFT ? i : i + lk - lq;
  return r;
}

/* Key j is visible to row r: it exists, and the causal rule, the window, the mask and the
 * bias allow it (only -inf in the bias hides a key). */
static int visible(const attncheck_call_v2 *c, const row *r, int64_t j) {
  if (j >= r->kv_len) return 0;
  if (c->causal != ATTNCHECK_CAUSAL_NONE && j > r->diagonal) return 0;
  if (c->window_left >= 0 && j < r->diagonal - c->window_left) return 0;
  if (c->window_right >= 0 && j > r->diagonal + c->window_right) return 0;
  if (c->mask.data && !((const uint8_t *)c->mask.data)[offset_of(c->mask.stride, r->b, r->h, r->i, j)]) return 0;
  if (c->bias.data && load(c->bias.data, c->dtype, offset_of(c->bias.stride, r->b, r->h, r->i, j)) == -INFINITY)
    return 0;
  return 1;
}

/* The logit of visible key j, in the spec's order: z = scale (q_i . k_j), then
 * softcap tanh(z / softcap), then + bias, then - slope |d_i - j| (the slope of (b, h)). */
static double logit(const attncheck_call_v2 *c, const row *r, int64_t j, double scale) {
  double dot = 0;
  for (int64_t d = 0; d < c->head_dim; ++d)
    dot += load(c->q.data, c->dtype, offset_of(c->q.stride, r->b, r->h, r->q_row, d)) *
           load(c->k.data, c->dtype, key_offset(c->k.stride, r, j, d));
  double z = scale * dot;
  if (c->softcap > 0) z = c->softcap * tanh(z / c->softcap);
  if (c->bias.data) z += load(c->bias.data, c->dtype, offset_of(c->bias.stride, r->b, r->h, r->i, j));
  if (r->slopes) z -= (double)r->slopes[r->h] * fabs((double)(r->diagonal - j));
  return z;
}

/* ---- one query row ------------------------------------------------------------------- */

/* Scratch for one row, sized kv_len, reused for every row of a call. */
typedef struct scratch {
  int64_t *keys; /* the visible keys S of the row, in order */
  double *z;     /* their logits, then their unnormalised weights exp(z - max) */
} scratch;

/* out row (b, h, i) = sum_{j in S} p_j v_j and, when requested, its lse, with
 *   p_j = exp(z_j) / (exp(s) + sum_{k in S} exp(z_k)),  lse = log(exp(s) + sum exp(z_k))
 * where s is the sink of head h (no exp(s) term without sinks). */
static void attend_row(const attncheck_call_v2 *c, const row *r, double scale, scratch *w) {
  const double sink = c->sinks ? (double)c->sinks[r->h] : -INFINITY;
  float *lse = c->lse ? &c->lse[(r->b * c->heads + r->h) * c->q_len + r->i] : NULL;

  /* 1. The visible keys, their logits and the row maximum (the sink takes part). */
  int64_t n = 0;
  double max = sink;
  for (int64_t j = 0; j < r->kv_len; ++j) {
    if (!visible(c, r, j)) continue;
    w->keys[n] = j;
    w->z[n] = logit(c, r, j, scale);
    if (w->z[n] > max) max = w->z[n];
    ++n;
  }

  /* 2. A row that sees no key: out = 0 and lse = s (-inf without sinks), not 0/0. */
  if (n == 0) {
    for (int64_t col = 0; col < c->value_dim; ++col)
      store(c->out.data, c->dtype, offset_of(c->out.stride, r->b, r->h, r->q_row, col), 0.0);
    if (lse) *lse = (float)sink;
    return;
  }

  /* 3. Weights exp(z - max) <= 1 and their sum, the sink's term first (exp(-inf) = 0). */
  double sum = exp(sink - max);
  for (int64_t t = 0; t < n; ++t) {
    w->z[t] = exp(w->z[t] - max);
    sum += w->z[t];
  }

  /* 4. out row = sum_j weight_j v_j / sum: only the visible keys' values are read. */
  for (int64_t col = 0; col < c->value_dim; ++col) {
    double acc = 0;
    for (int64_t t = 0; t < n; ++t)
      acc += w->z[t] * load(c->v.data, c->dtype, key_offset(c->v.stride, r, w->keys[t], col));
    store(c->out.data, c->dtype, offset_of(c->out.stride, r->b, r->h, r->q_row, col), acc / sum);
  }

  /* 5. lse = max + log(sum exp(z - max)), the natural log, stored in float. */
  if (lse) *lse = (float)(max + log(sum));
}

/* ---- the call -------------------------------------------------------------------------- */

/* The length of b's slot of query rows or keys: cu[b+1] - cu[b] packed, else the padded
 * extent q_len or kv_len. */
static int64_t slot_of(const int32_t *cu, int64_t b, int64_t full) { return cu ? (int64_t)(cu[b + 1] - cu[b]) : full; }

/* Batch b's number of query rows (Lq) or keys (Lk): the per-sequence length when given,
 * else its slot's. */
static int64_t length_of(const int32_t *lens, const int32_t *cu, int64_t b, int64_t full) {
  return lens ? (int64_t)lens[b] : slot_of(cu, b, full);
}

/* What the checker promises, checked anyway: a plugin copied from this file will meet
 * other callers. 0 with a message in err when the call is malformed. */
static int call_is_valid(const attncheck_call_v3 *call, char *err, size_t err_len) {
  const attncheck_call_v2 *c = &call->v2;
  if (c->kv_heads <= 0 || c->heads % c->kv_heads != 0) {
    snprintf(err, err_len, "heads (%lld) must be a multiple of kv_heads (%lld)", (long long)c->heads,
             (long long)c->kv_heads);
    return 0;
  }
  if (call->alibi_batch_stride != 0 && (!c->alibi_slopes || call->alibi_batch_stride < c->heads)) {
    snprintf(err, err_len, "alibi_batch_stride (%lld) is neither 0 nor at least heads with slopes",
             (long long)call->alibi_batch_stride);
    return 0;
  }
  if (call->block_table && c->kv_len > call->max_pages_per_seq * call->page_size) {
    snprintf(err, err_len, "kv_len (%lld) is past max_pages_per_seq * page_size", (long long)c->kv_len);
    return 0;
  }
  for (int64_t b = 0; b < c->batch; ++b) {
    const int64_t nq = slot_of(call->cu_seqlens_q, b, c->q_len), nk = slot_of(call->cu_seqlens_k, b, c->kv_len);
    const int64_t lq = length_of(c->q_lens, call->cu_seqlens_q, b, c->q_len);
    const int64_t lk = length_of(c->kv_lens, call->cu_seqlens_k, b, c->kv_len);
    if (nq < 0 || nq > c->q_len || nk < 0 || nk > c->kv_len || lq < 0 || lq > nq || lk < 0 || lk > nk) {
      snprintf(err, err_len, "batch %lld: lengths %lld/%lld outside slots 0..%lld/0..%lld (bounds %lld/%lld)",
               (long long)b, (long long)lq, (long long)lk, (long long)nq, (long long)nk, (long long)c->q_len,
               (long long)c->kv_len);
      return 0;
    }
    /* Paged: the entries that name b's keys (e < ceil(Lk/page_size) <= max_pages_per_seq,
     * as Lk <= kv_len) are pages of the pool; the rest are not read. */
    for (int64_t e = 0; call->block_table && e < (lk + call->page_size - 1) / call->page_size; ++e) {
      const int32_t page = call->block_table[b * call->max_pages_per_seq + e];
      if (page < 0 || page >= call->num_pages) {
        snprintf(err, err_len, "batch %lld: block_table entry %lld is not a page of 0..%lld", (long long)b,
                 (long long)e, (long long)call->num_pages - 1);
        return 0;
      }
    }
  }
  return 1;
}

static int example_forward_v3(const attncheck_call_v3 *call, char *err, size_t err_len) {
  if (!added_fields_neutral(call, err, err_len)) return 2; /* any value but OK and UNSUPPORTED is an error */
  const attncheck_call_v2 *c = &call->v2; /* all that is left: a version-2 call */
  if (c->dtype != ATTNCHECK_F32 && c->dtype != ATTNCHECK_F64) {
    snprintf(err, err_len, "f32 and f64 only (dtype %d)", (int)c->dtype);
    return ATTNCHECK_UNSUPPORTED;
  }
  if (!call_is_valid(call, err, err_len)) return 2;

  /* NaN means "your default", which the ABI fixes at 1/sqrt(head_dim). */
  const double scale = isnan(c->scale) ? 1.0 / sqrt((double)c->head_dim) : c->scale;

  /* Scratch per call: nothing is kept between calls (they may come from a fresh process). */
  const size_t n = (size_t)(c->kv_len > 0 ? c->kv_len : 1);
  scratch w = {(int64_t *)malloc(n * sizeof(int64_t)), (double *)malloc(n * sizeof(double))};
  if (!w.keys || !w.z) {
    free(w.keys);
    free(w.z);
    snprintf(err, err_len, "out of memory for %lld keys of scratch", (long long)c->kv_len);
    return 2;
  }
  for (int64_t b = 0; b < c->batch; ++b) {
    const int64_t lq = length_of(c->q_lens, call->cu_seqlens_q, b, c->q_len);
    const int64_t lk = length_of(c->kv_lens, call->cu_seqlens_k, b, c->kv_len);
    for (int64_t h = 0; h < c->heads; ++h)
      for (int64_t i = 0; i < lq; ++i) { /* rows i >= Lq are padding: not read, not written */
        const row r = row_at(call, b, h, i, lq, lk);
        attend_row(c, &r, scale, &w);
      }
  }
  free(w.keys);
  free(w.z);
  return ATTNCHECK_OK;
}

/* Version 2's forward features, PACKED, PAGED, ALIBI_BATCH, V_VIEW_OF_K and BROADCAST_KV (kv_formats and numerics 0, neutral), and the
 * promises its loop keeps (see the top of the file). Another version-3 feature declared
 * here would be loaded, but no law of this attncheck judges it yet, and the reports would
 * say so. The struct is static: it must outlive the call. */
const attncheck_impl_v3 *attncheck_plugin_v3(void) {
  static const attncheck_impl_v3 impl = {
      ATTNCHECK_ABI_VERSION_3,
      ATTNCHECK_FEATURE_MASK | ATTNCHECK_FEATURE_CAUSAL | ATTNCHECK_FEATURE_GQA | ATTNCHECK_FEATURE_STRIDES |
          ATTNCHECK_FEATURE_LENGTHS | ATTNCHECK_FEATURE_WINDOW | ATTNCHECK_FEATURE_SOFTCAP | ATTNCHECK_FEATURE_BIAS |
          ATTNCHECK_FEATURE_ALIBI | ATTNCHECK_FEATURE_SINKS | ATTNCHECK_FEATURE_LSE | ATTNCHECK_FEATURE_PACKED |
          ATTNCHECK_FEATURE_PAGED | ATTNCHECK_FEATURE_ALIBI_BATCH | ATTNCHECK_FEATURE_V_VIEW_OF_K |
          ATTNCHECK_FEATURE_BROADCAST_KV,
      0, /* kv_formats: only with ATTNCHECK_FEATURE_KV_FORMATS */
      0, /* numerics */
      ATTNCHECK_PROMISE_DETERMINISTIC | ATTNCHECK_PROMISE_BATCH_INVARIANT, /* promises */
      "example_c_v3",
      example_forward_v3,
      NULL /* backward: no gradients */
  };
  return &impl;
}
