/* example_attention: a minimal, correct attncheck plugin in plain C.
 *
 * Copy this file to start your own plugin. It shows everything the pinned ABI
 * (attncheck/plugin.h, docs/abi/plugin-abi.md) asks of an implementation:
 *   - export exactly one symbol, attncheck_plugin_v1, returning a static
 *     attncheck_impl whose abi_version is ATTNCHECK_ABI_VERSION;
 *   - in forward(), compute out = softmax(scale * q k^T over the visible keys) v
 *     for every (batch, head, query row);
 *   - honour the causal rule and the mask (a key is visible iff both allow it);
 *   - use 1/sqrt(head_dim) when scale is NaN;
 *   - write zeros for a query row that sees no key at all;
 *   - return ATTNCHECK_UNSUPPORTED (with a message) for what you do not offer,
 *     here the 16-bit dtypes: attncheck skips those cases instead of failing them.
 *
 * Build (what plugins/CMakeLists.txt does):
 *   cc -O2 -shared -fPIC -I<attncheck>/include example_attention.c -o libexample_attention.so -lm
 * Check it:
 *   attncheck check --plugin ./libexample_attention.so
 *
 * Tensor layouts (dense, row-major, bh = b * heads + h):
 *   q    [batch][heads][q_len][head_dim]
 *   k    [batch][heads][kv_len][head_dim]
 *   v    [batch][heads][kv_len][value_dim]
 *   mask [batch][heads][q_len][kv_len]   (NULL: no mask; nonzero = may attend)
 *   out  [batch][heads][q_len][value_dim]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "attncheck/plugin.h"

/* The causal rule alone, exactly as the ABI states it. */
static int causal_allows(const attncheck_call *c, int64_t i, int64_t j) {
  switch (c->causal) {
    case ATTNCHECK_CAUSAL_NONE: return 1;
    case ATTNCHECK_CAUSAL_TOP_LEFT: return j <= i;
    case ATTNCHECK_CAUSAL_BOTTOM_RIGHT: return j <= i + c->kv_len - c->q_len;
  }
  return 0;
}

/* Query i of head bh may see key j: the causal rule and the mask both allow it. */
static int visible(const attncheck_call *c, int64_t bh, int64_t i, int64_t j) {
  if (!causal_allows(c, i, j)) return 0;
  if (c->mask && !c->mask[(bh * c->q_len + i) * c->kv_len + j]) return 0;
  return 1;
}

/* One body for float and double. The arithmetic is done in double for both:
 * any precision at least as good as the storage format is allowed, and the
 * rounding back to float happens once, at the store. `logits` holds kv_len
 * doubles of scratch space, reused for every row. */
#define DEFINE_ATTENTION(NAME, T)                                                      \
  static void NAME(const attncheck_call *c, double *logits) {                          \
    const T *q = (const T *)c->q, *k = (const T *)c->k, *v = (const T *)c->v;          \
    T *out = (T *)c->out;                                                              \
    /* NaN means "your default", which the ABI fixes at 1/sqrt(head_dim). */           \
    const double scale = isnan(c->scale) ? 1.0 / sqrt((double)c->head_dim) : c->scale; \
    const int64_t heads_total = c->batch * c->heads;                                   \
    for (int64_t bh = 0; bh < heads_total; ++bh) {                                     \
      for (int64_t i = 0; i < c->q_len; ++i) {                                         \
        const T *qi = q + (bh * c->q_len + i) * c->head_dim;   /* [head_dim] */        \
        T *oi = out + (bh * c->q_len + i) * c->value_dim;      /* [value_dim] */       \
        /* 1. Scaled logits of the visible keys, and their maximum. */                 \
        double max_logit = -INFINITY;                                                  \
        int sees_any = 0;                                                              \
        for (int64_t j = 0; j < c->kv_len; ++j) {                                      \
          if (!visible(c, bh, i, j)) continue;                                         \
          const T *kj = k + (bh * c->kv_len + j) * c->head_dim; /* [head_dim] */       \
          double dot = 0;                                                              \
          for (int64_t d = 0; d < c->head_dim; ++d) dot += (double)qi[d] * kj[d];      \
          logits[j] = scale * dot;                                                     \
          if (!sees_any || logits[j] > max_logit) max_logit = logits[j];               \
          sees_any = 1;                                                                \
        }                                                                              \
        /* 2. A row that sees nothing is all zeros (not NaN from 0/0). */              \
        if (!sees_any) {                                                               \
          for (int64_t col = 0; col < c->value_dim; ++col) oi[col] = 0;                \
          continue;                                                                    \
        }                                                                              \
        /* 3. Stable softmax: subtracting the maximum keeps exp() <= 1, so it          \
         *    cannot overflow, and the largest weight is exactly exp(0) = 1. */        \
        double sum = 0;                                                                \
        for (int64_t j = 0; j < c->kv_len; ++j) {                                      \
          if (!visible(c, bh, i, j)) continue;                                         \
          logits[j] = exp(logits[j] - max_logit); /* now an unnormalised weight */     \
          sum += logits[j];                                                            \
        }                                                                              \
        /* 4. out row = sum_j weight_j * v_j over the visible keys. Every element      \
         *    of out is written: attncheck poisons out and checks. */                  \
        for (int64_t col = 0; col < c->value_dim; ++col) {                             \
          double acc = 0;                                                              \
          for (int64_t j = 0; j < c->kv_len; ++j) {                                    \
            if (!visible(c, bh, i, j)) continue;                                       \
            acc += logits[j] / sum * v[(bh * c->kv_len + j) * c->value_dim + col];     \
          }                                                                            \
          oi[col] = (T)acc;                                                            \
        }                                                                              \
      }                                                                                \
    }                                                                                  \
  }

DEFINE_ATTENTION(attention_f32, float)
DEFINE_ATTENTION(attention_f64, double)

static int example_forward(const attncheck_call *c, char *err, size_t err_len) {
  if (c->dtype != ATTNCHECK_F32 && c->dtype != ATTNCHECK_F64) {
    /* Not a failure: attncheck reports these cases as skipped. */
    snprintf(err, err_len, "example_attention supports f32 and f64 only (got dtype %d)", (int)c->dtype);
    return ATTNCHECK_UNSUPPORTED;
  }
  /* Scratch for one row of logits. Allocate per call: the ABI promises fresh
   * pointers each call, and calls may come from a child process. */
  double *logits = (double *)malloc((size_t)(c->kv_len > 0 ? c->kv_len : 1) * sizeof(double));
  if (!logits) {
    snprintf(err, err_len, "out of memory for %lld logits", (long long)c->kv_len);
    return 2; /* any value other than OK and UNSUPPORTED is an error */
  }
  if (c->dtype == ATTNCHECK_F32)
    attention_f32(c, logits);
  else
    attention_f64(c, logits);
  free(logits);
  return ATTNCHECK_OK;
}

/* The one exported symbol. The struct is static: it must outlive the call. */
const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "example_c", example_forward};
  return &impl;
}
