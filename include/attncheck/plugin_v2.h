#ifndef ATTNCHECK_PLUGIN_V2_H
#define ATTNCHECK_PLUGIN_V2_H

#include "plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATTNCHECK_ABI_VERSION_2 2u

/* What a plugin offers beyond plain attention. The checker only sends a call that uses a
 * feature the plugin declares; every field of an undeclared feature holds its neutral
 * value (given after each field below). ATTNCHECK_UNSUPPORTED stays the answer for any
 * finer limit (a head_dim, a dtype, a combination), but a declared feature refused on
 * every call that uses it is a failure. */
#define ATTNCHECK_FEATURE_MASK     (1u << 0)  /* boolean mask */
#define ATTNCHECK_FEATURE_CAUSAL   (1u << 1)  /* causal rules other than NONE */
#define ATTNCHECK_FEATURE_GQA      (1u << 2)  /* kv_heads < heads */
#define ATTNCHECK_FEATURE_STRIDES  (1u << 3)  /* q, k, v, out (and gradients) not dense */
#define ATTNCHECK_FEATURE_LENGTHS  (1u << 4)  /* q_lens / kv_lens */
#define ATTNCHECK_FEATURE_WINDOW   (1u << 5)  /* window_left / window_right */
#define ATTNCHECK_FEATURE_SOFTCAP  (1u << 6)  /* softcap */
#define ATTNCHECK_FEATURE_BIAS     (1u << 7)  /* additive bias tensor */
#define ATTNCHECK_FEATURE_ALIBI    (1u << 8)  /* alibi_slopes */
#define ATTNCHECK_FEATURE_SINKS    (1u << 9)  /* sinks */
#define ATTNCHECK_FEATURE_LSE      (1u << 10) /* lse output */

/* A 4-d view [batch][head][row][col]: element (b, h, r, c) is at
 *   data + b*stride[0] + h*stride[1] + r*stride[2] + c*stride[3]
 * counted in elements of the view's type. Every stride is >= 0 and stride[3] is 1.
 * Without ATTNCHECK_FEATURE_STRIDES the views of q, k, v, out (and of the gradients) are
 * dense over their own extents. Mask and bias are always read through their strides: a
 * stride of 0 on axes 0 to 2 broadcasts, and is only ever sent for them. Output views
 * overlap neither themselves, each other, nor an input; inputs may overlap each other. */
typedef struct attncheck_view {
  const void *data;
  int64_t stride[4];
} attncheck_view;

typedef struct attncheck_out_view {
  void *data;
  int64_t stride[4];
} attncheck_out_view;

/* One forward call.
 *   q    [batch][heads][q_len][head_dim]
 *   k    [batch][kv_heads][kv_len][head_dim]
 *   v    [batch][kv_heads][kv_len][value_dim]
 *   mask [batch][heads][q_len][kv_len] uint8, nonzero = may attend
 *   bias [batch][heads][q_len][kv_len] in the call's dtype, added to the logits
 *   out  [batch][heads][q_len][value_dim]
 *   lse  [batch][heads][q_len] float, dense
 * Query head h reads kv head h / (heads / kv_heads); heads % kv_heads == 0. Mask, bias,
 * alibi_slopes and sinks are indexed by the query head h.
 *
 * Lengths. For batch b let Lq = q_lens ? q_lens[b] : q_len and Lk = kv_lens ? kv_lens[b] :
 * kv_len, with 0 <= Lq <= q_len and 0 <= Lk <= kv_len. Only query rows i < Lq and keys
 * j < Lk exist; the rest is padding. Padding rows and keys of q, k, v (and of dout), and the
 * mask and bias entries at them, may hold any bits, NaN included, and must not influence
 * anything. Padding rows of out, lse and dq, padding keys of dk and dv, and the gaps between
 * the elements of any output view are left as they are: a write there is out of bounds.
 *
 * Visibility. Row i's diagonal is
 *   d_i = i                (causal TOP_LEFT)
 *   d_i = i + Lk - Lq      (causal BOTTOM_RIGHT and NONE: windows and ALiBi align to the
 *                           bottom right, as FlashAttention does)
 * Key j is visible to row i iff j < Lk, and the causal rule allows it (TOP_LEFT and
 * BOTTOM_RIGHT: j <= d_i), and the window allows it (window_left < 0 or j >= d_i -
 * window_left; window_right < 0 or j <= d_i + window_right), and the mask allows it, and
 * the bias is not -inf there. window_left = W admits the W + 1 keys d_i - W .. d_i on the
 * left (a sliding window of N keys is window_left = N - 1); the checker sends -1 for an
 * unbounded side. Only -inf in the bias hides a key (a finite -1e4 leaves it visible);
 * the bias holds no +inf and, unless a law about NaN is being checked, no NaN.
 *
 * Logits. For a visible key:
 *   z = scale * (q_i . k_j)
 *   z = softcap * tanh(z / softcap)            if softcap > 0 (finite)
 *   z = z + bias[b][h][i][j]                   if bias
 *   z = z - alibi_slopes[h] * |d_i - j|        if alibi_slopes
 * The sink s = sinks[h] is a raw logit: no scale, softcap, bias or ALiBi applies to it.
 * With S the visible keys of row i:
 *   p_j   = exp(z_j) / (exp(s) + sum_{k in S} exp(z_k))       (no exp(s) term without sinks)
 *   out_i = sum_{j in S} p_j v_j
 *   lse_i = log(exp(s) + sum_{k in S} exp(z_k))               natural log, of z as defined
 * When S is empty, out_i = 0 and lse_i = s (or -inf without sinks). */
typedef struct attncheck_call_v2 {
  attncheck_dtype dtype;
  int64_t batch, heads, kv_heads, q_len, kv_len, head_dim, value_dim;  /* kv_heads (neutral: heads) */
  attncheck_view q, k, v;      /* inputs */
  attncheck_out_view out;      /* output */
  float *lse;                  /* output, or NULL even when LSE is declared (neutral: NULL) */
  const int32_t *q_lens;       /* [batch] or NULL (neutral: NULL) */
  const int32_t *kv_lens;      /* [batch] or NULL (neutral: NULL) */
  attncheck_causal causal;     /* (neutral: ATTNCHECK_CAUSAL_NONE) */
  int64_t window_left;         /* < 0: unbounded (neutral: -1) */
  int64_t window_right;        /* < 0: unbounded (neutral: -1) */
  double scale;                /* NaN: your default, which must be 1/sqrt(head_dim) */
  double softcap;              /* 0: none, else finite > 0 (neutral: 0) */
  attncheck_view mask;         /* mask.data NULL: no mask (neutral) */
  attncheck_view bias;         /* bias.data NULL: no bias (neutral) */
  const float *alibi_slopes;   /* [heads], finite, or NULL (neutral: NULL) */
  const float *sinks;          /* [heads], finite, or NULL (neutral: NULL) */
} attncheck_call_v2;

/* Gradients of sum(out * dout) with respect to q, k and v for the forward call `call`.
 * In a backward call, call->out holds this plugin's own forward output for the call and
 * call->lse its own lse (when LSE is declared, else NULL): both are inputs here, as the
 * O and lse that backward kernels take; writing them is out of bounds. dout has out's
 * shape, dq q's, dk k's, dv v's, each with its own strides, in the call's dtype. Gradients
 * are overwritten, not accumulated; a kv head's dk and dv sum over the query heads that
 * read it. dq of a row that sees no key is 0; dk and dv of a key that no row sees are 0.
 * No gradient is asked for bias, alibi_slopes, sinks, softcap or scale. backward may
 * answer ATTNCHECK_UNSUPPORTED for calls forward accepts. */
typedef struct attncheck_grad {
  attncheck_view dout;              /* input */
  attncheck_out_view dq, dk, dv;    /* outputs */
} attncheck_grad;

typedef struct attncheck_impl_v2 {
  uint32_t abi_version;        /* ATTNCHECK_ABI_VERSION_2 */
  uint32_t features;           /* ATTNCHECK_FEATURE_* bits */
  const char *name;
  int (*forward)(const attncheck_call_v2 *call, char *err, size_t err_len);
  int (*backward)(const attncheck_call_v2 *call, const attncheck_grad *grad,
                  char *err, size_t err_len);  /* NULL: no gradients */
} attncheck_impl_v2;

/* The symbol a version-2 plugin exports. */
const attncheck_impl_v2 *attncheck_plugin_v2(void);

#ifdef __cplusplus
}
#endif

#endif
