/* sixteen_bit_sums_plugin: the example plugin (plugins/example_c/example_attention.c)
 * as a user narrowed it, issue #34: the softmax sum and the weighted sum of V
 * rounded to f16 after every add (as _Float16 sums are; tests/support/f16_nearest.h,
 * since clang 14 has no _Float16 on x86); logits and weights in double,
 * f32 and f64 only. attncheck diagnoses it "accumulates in 16-bit" and groups
 * the laws it breaks as one cause (tests/cli/failure_groups_cli.py).
 *
 * Tensors dense, row-major, bh = b * heads + h: q [batch][heads][q_len][head_dim],
 * k [..][kv_len][head_dim], v [..][kv_len][value_dim], mask [..][q_len][kv_len],
 * out [..][q_len][value_dim]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "attncheck/plugin.h"
#include "f16_nearest.h"

static int visible(const attncheck_call *c, int64_t bh, int64_t i, int64_t j) {
  if (c->causal == ATTNCHECK_CAUSAL_TOP_LEFT && j > i) return 0;
  if (c->causal == ATTNCHECK_CAUSAL_BOTTOM_RIGHT && j > i + c->kv_len - c->q_len) return 0;
  return !c->mask || c->mask[(bh * c->q_len + i) * c->kv_len + j];
}

#define DEFINE_ATTENTION(NAME, T)                                                                       \
  static void NAME(const attncheck_call *c, double *w) {                                                \
    const T *q = (const T *)c->q, *k = (const T *)c->k, *v = (const T *)c->v;                           \
    T *out = (T *)c->out;                                                                               \
    const double scale = isnan(c->scale) ? 1.0 / sqrt((double)c->head_dim) : c->scale;                 \
    for (int64_t bh = 0; bh < c->batch * c->heads; ++bh)                                                \
      for (int64_t i = 0; i < c->q_len; ++i) {                                                          \
        const T *qi = q + (bh * c->q_len + i) * c->head_dim;                                            \
        T *oi = out + (bh * c->q_len + i) * c->value_dim;                                               \
        double top = -INFINITY;                                                                         \
        for (int64_t j = 0; j < c->kv_len; ++j) {                                                       \
          if (!visible(c, bh, i, j)) continue;                                                          \
          const T *kj = k + (bh * c->kv_len + j) * c->head_dim;                                         \
          double dot = 0;                                                                               \
          for (int64_t d = 0; d < c->head_dim; ++d) dot += (double)qi[d] * kj[d];                       \
          w[j] = scale * dot;                                                                           \
          if (w[j] > top) top = w[j];                                                                   \
        }                                                                                               \
        if (top == -INFINITY) {                                                                         \
          for (int64_t col = 0; col < c->value_dim; ++col) oi[col] = 0;                                 \
          continue;                                                                                     \
        }                                                                                               \
        double sum = 0; /* the fault: 16-bit running sums */                                            \
        for (int64_t j = 0; j < c->kv_len; ++j)                                                         \
          if (visible(c, bh, i, j)) sum = f16_nearest(sum + (w[j] = exp(w[j] - top)));                  \
        for (int64_t col = 0; col < c->value_dim; ++col) {                                              \
          double acc = 0;                                                                               \
          for (int64_t j = 0; j < c->kv_len; ++j)                                                       \
            if (visible(c, bh, i, j))                                                                     \
              acc = f16_nearest(acc + w[j] / sum * v[(bh * c->kv_len + j) * c->value_dim + col]);       \
          oi[col] = (T)acc;                                                                             \
        }                                                                                               \
      }                                                                                                 \
  }

DEFINE_ATTENTION(attention_f32, float)
DEFINE_ATTENTION(attention_f64, double)

static int forward(const attncheck_call *c, char *err, size_t err_len) {
  if (c->dtype != ATTNCHECK_F32 && c->dtype != ATTNCHECK_F64) {
    snprintf(err, err_len, "f32 and f64 only");
    return ATTNCHECK_UNSUPPORTED;
  }
  double *w = (double *)malloc((size_t)(c->kv_len > 0 ? c->kv_len : 1) * sizeof(double));
  if (!w) return 2;
  if (c->dtype == ATTNCHECK_F32)
    attention_f32(c, w);
  else
    attention_f64(c, w);
  free(w);
  return ATTNCHECK_OK;
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "sixteen_bit_sums", forward};
  return &impl;
}
