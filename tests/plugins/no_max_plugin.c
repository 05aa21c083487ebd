/* A plugin with the classic softmax overflow: exp() of the raw scaled logits,
 * without subtracting the row's largest logit first, in the call's own dtype
 * (float for F32, double for F64). Everything else is right (scale, causal
 * rules, mask, zero rows for rows that see nothing), so it passes every
 * ordinary input and fails only once a visible logit passes ~88.7 (float) or
 * ~709.8 (double): exp() gives inf, inf / inf gives NaN. fuzz_plugin must find
 * that (fuzz/README.md), and `attncheck replay` must reproduce the case it saves.
 * F16 and BF16 are unsupported.
 *   q [bh][q_len][head_dim], k [bh][kv_len][head_dim], v [bh][kv_len][value_dim],
 *   mask [bh][q_len][kv_len] (optional), out [bh][q_len][value_dim]. */
#include <math.h>
#include <stdio.h>

#include "attncheck/plugin.h"

static int no_max_visible(const attncheck_call *c, int64_t bh, int64_t i, int64_t j) {
  if (c->causal == ATTNCHECK_CAUSAL_TOP_LEFT && j > i) return 0;
  if (c->causal == ATTNCHECK_CAUSAL_BOTTOM_RIGHT && j > i + c->kv_len - c->q_len) return 0;
  return !c->mask || c->mask[(bh * c->q_len + i) * c->kv_len + j];
}

/* One body for both dtypes: T is float or double, EXP expf or exp. */
#define NO_MAX_ATTENTION(NAME, T, EXP)                                                   \
  static void NAME(const attncheck_call *c) {                                            \
    const T *q = (const T *)c->q, *k = (const T *)c->k, *v = (const T *)c->v;            \
    T *out = (T *)c->out;                                                                \
    const T scale = (T)(isnan(c->scale) ? 1.0 / sqrt((double)c->head_dim) : c->scale);   \
    for (int64_t bh = 0; bh < c->batch * c->heads; ++bh) {                               \
      for (int64_t i = 0; i < c->q_len; ++i) {                                           \
        T *o = out + (bh * c->q_len + i) * c->value_dim;                                 \
        for (int64_t col = 0; col < c->value_dim; ++col) o[col] = 0;                     \
        T sum = 0;                                                                       \
        int sees_any = 0;                                                                \
        for (int64_t j = 0; j < c->kv_len; ++j) {                                        \
          if (!no_max_visible(c, bh, i, j)) continue;                                    \
          sees_any = 1;                                                                  \
          T dot = 0;                                                                     \
          for (int64_t d = 0; d < c->head_dim; ++d)                                      \
            dot += q[(bh * c->q_len + i) * c->head_dim + d] *                            \
                   k[(bh * c->kv_len + j) * c->head_dim + d];                            \
          const T w = EXP(scale * dot); /* the fault: no "- row max" */                  \
          sum += w;                                                                      \
          for (int64_t col = 0; col < c->value_dim; ++col)                               \
            o[col] += w * v[(bh * c->kv_len + j) * c->value_dim + col];                  \
        }                                                                                \
        if (sees_any) /* a row that sees nothing keeps its zeros */                      \
          for (int64_t col = 0; col < c->value_dim; ++col) o[col] /= sum;                \
      }                                                                                  \
    }                                                                                    \
  }

NO_MAX_ATTENTION(no_max_f32, float, expf)
NO_MAX_ATTENTION(no_max_f64, double, exp)

static int no_max_forward(const attncheck_call *c, char *err, size_t err_len) {
  if (c->dtype == ATTNCHECK_F32) no_max_f32(c);
  else if (c->dtype == ATTNCHECK_F64) no_max_f64(c);
  else {
    snprintf(err, err_len, "no_max_plugin supports f32 and f64 only");
    return ATTNCHECK_UNSUPPORTED;
  }
  return ATTNCHECK_OK;
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "no_max_plugin", no_max_forward};
  return &impl;
}
