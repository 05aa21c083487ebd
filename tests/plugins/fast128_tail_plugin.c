/* A kernel with a head_dim-128 fast path that lost its remainder loop: at
 * head_dim 128 it takes the keys in tiles of 16 and never reaches the last
 * kv_len % 16 of them (a row with fewer than 16 visible keys in whole tiles
 * sees none and writes zeros). At every other head_dim it runs the general
 * path, which is correct (row max, scale, causal rules, mask, zero rows for
 * rows that see nothing). fuzz_plugin's default caps (head_dim up to 6) never
 * reach the fast path; with a profile of `attncheck check`
 * (ATTNCHECK_FUZZ_PROFILE=decode, fuzz/README.md) it is found
 * (fuzz/profile_shapes_test.py). F16 and BF16 are unsupported.
 *   q [bh][q_len][head_dim], k [bh][kv_len][head_dim], v [bh][kv_len][value_dim],
 *   mask [bh][q_len][kv_len] (optional), out [bh][q_len][value_dim]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "attncheck/plugin.h"

enum { FAST_HEAD_DIM = 128, KEY_TILE = 16 };

/* The causal rule and the mask, as the ABI states them (plugins/example_c). */
static int visible(const attncheck_call *c, int64_t bh, int64_t i, int64_t j) {
  if (c->causal == ATTNCHECK_CAUSAL_TOP_LEFT && j > i) return 0;
  if (c->causal == ATTNCHECK_CAUSAL_BOTTOM_RIGHT && j > i + c->kv_len - c->q_len) return 0;
  return !c->mask || c->mask[(bh * c->q_len + i) * c->kv_len + j];
}

/* The example plugin's arithmetic (plugins/example_c/example_attention.c, in
 * double, stable softmax, zeros for a row that sees nothing) over the keys
 * [0, keys): kv_len on the general path. `logits` holds kv_len doubles. */
#define DEFINE_ATTENTION(NAME, T)                                                        \
  static void NAME(const attncheck_call *c, int64_t keys, double *logits) {              \
    const T *q = (const T *)c->q, *k = (const T *)c->k, *v = (const T *)c->v;            \
    T *out = (T *)c->out;                                                                \
    const double scale = isnan(c->scale) ? 1.0 / sqrt((double)c->head_dim) : c->scale;   \
    for (int64_t bh = 0; bh < c->batch * c->heads; ++bh) {                               \
      for (int64_t i = 0; i < c->q_len; ++i) {                                           \
        const T *qi = q + (bh * c->q_len + i) * c->head_dim; /* [head_dim] */            \
        T *oi = out + (bh * c->q_len + i) * c->value_dim;    /* [value_dim] */           \
        double max_logit = -INFINITY;                                                    \
        int sees_any = 0;                                                                \
        for (int64_t j = 0; j < keys; ++j) {                                             \
          if (!visible(c, bh, i, j)) continue;                                           \
          const T *kj = k + (bh * c->kv_len + j) * c->head_dim;                          \
          double dot = 0;                                                                \
          for (int64_t d = 0; d < c->head_dim; ++d) dot += (double)qi[d] * kj[d];        \
          logits[j] = scale * dot;                                                       \
          if (!sees_any || logits[j] > max_logit) max_logit = logits[j];                 \
          sees_any = 1;                                                                  \
        }                                                                                \
        if (!sees_any) {                                                                 \
          for (int64_t col = 0; col < c->value_dim; ++col) oi[col] = 0;                  \
          continue;                                                                      \
        }                                                                                \
        double sum = 0;                                                                  \
        for (int64_t j = 0; j < keys; ++j) {                                             \
          if (!visible(c, bh, i, j)) continue;                                           \
          logits[j] = exp(logits[j] - max_logit);                                        \
          sum += logits[j];                                                              \
        }                                                                                \
        for (int64_t col = 0; col < c->value_dim; ++col) {                               \
          double acc = 0;                                                                \
          for (int64_t j = 0; j < keys; ++j) {                                           \
            if (!visible(c, bh, i, j)) continue;                                         \
            acc += logits[j] / sum * v[(bh * c->kv_len + j) * c->value_dim + col];       \
          }                                                                              \
          oi[col] = (T)acc;                                                              \
        }                                                                                \
      }                                                                                  \
    }                                                                                    \
  }

DEFINE_ATTENTION(attention_f32, float)
DEFINE_ATTENTION(attention_f64, double)

static int fast128_forward(const attncheck_call *c, char *err, size_t err_len) {
  if (c->dtype != ATTNCHECK_F32 && c->dtype != ATTNCHECK_F64) {
    snprintf(err, err_len, "fast128_tail_plugin supports f32 and f64 only");
    return ATTNCHECK_UNSUPPORTED;
  }
  double *logits = malloc(sizeof(double) * (size_t)(c->kv_len > 0 ? c->kv_len : 1));
  if (!logits) {
    snprintf(err, err_len, "out of memory for %lld logits", (long long)c->kv_len);
    return 2; /* an error */
  }
  /* The fault: the fast path's key loop runs whole tiles only. */
  const int64_t keys = c->head_dim == FAST_HEAD_DIM ? c->kv_len / KEY_TILE * KEY_TILE : c->kv_len;
  if (c->dtype == ATTNCHECK_F32) attention_f32(c, keys, logits);
  else attention_f64(c, keys, logits);
  free(logits);
  return ATTNCHECK_OK;
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "fast128_tail_plugin", fast128_forward};
  return &impl;
}
