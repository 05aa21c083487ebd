/* Kernels that accept only their own shapes, as production kernels do, built
 * from this one file with one -D each (tests/shapes/CMakeLists.txt):
 *   SPEC_HEAD_DIM_128    head_dim 128 only, value_dim = head_dim (a fixed-size kernel)
 *   SPEC_DECODE          q_len = 1 only (a decode kernel over a KV cache)
 *   SPEC_MULTIPLE_OF_32  head_dim a multiple of 32
 *   SPEC_KV_LEN_16       kv_len 16 only (one compiled sequence length: a rule the
 *                        probe does not express, so most drawn cases go unjudged)
 *   SPEC_FAST64_NO_SCALE all shapes; its head_dim-64 fast path ignores an
 *                        explicit scale (uses 1/sqrt(64)): a real fault
 * Everything it accepts it computes correctly (except the fault), in double,
 * with a streaming softmax: one pass over the keys per query row.
 *   q [bh][q_len][head_dim], k [bh][kv_len][head_dim], v [bh][kv_len][value_dim],
 *   mask [bh][q_len][kv_len] (optional), out [bh][q_len][value_dim]; f32 and f64. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "attncheck/plugin.h"

static double load(const attncheck_call *c, const void *base, int64_t i) {
  return c->dtype == ATTNCHECK_F32 ? (double)((const float *)base)[i] : ((const double *)base)[i];
}

static int unsupported(char *err, size_t err_len, const char *why) {
  snprintf(err, err_len, "%s", why);
  return ATTNCHECK_UNSUPPORTED;
}

static int forward(const attncheck_call *c, char *err, size_t err_len) {
  if (c->dtype != ATTNCHECK_F32 && c->dtype != ATTNCHECK_F64) return unsupported(err, err_len, "f32 and f64 only");
#if defined(SPEC_HEAD_DIM_128)
  if (c->head_dim != 128 || c->value_dim != 128) return unsupported(err, err_len, "head_dim = value_dim = 128 only");
#elif defined(SPEC_DECODE)
  if (c->q_len != 1) return unsupported(err, err_len, "decode kernel: q_len 1 only");
#elif defined(SPEC_KV_LEN_16)
  if (c->kv_len != 16) return unsupported(err, err_len, "kv_len 16 only");
#elif defined(SPEC_MULTIPLE_OF_32)
  if (c->head_dim % 32 != 0) return unsupported(err, err_len, "head_dim must be a multiple of 32");
#endif
  double scale = isnan(c->scale) ? 1.0 / sqrt((double)c->head_dim) : c->scale;
#if defined(SPEC_FAST64_NO_SCALE)
  if (c->head_dim == 64) scale = 0.125; /* the fault: the fast path hard-codes 1/sqrt(64) */
#endif
  double *acc = malloc(sizeof(double) * (size_t)c->value_dim);
  if (!acc) return 2;
  for (int64_t bh = 0; bh < c->batch * c->heads; ++bh)
    for (int64_t i = 0; i < c->q_len; ++i) {
      double max = -INFINITY, sum = 0;
      for (int64_t col = 0; col < c->value_dim; ++col) acc[col] = 0;
      for (int64_t j = 0; j < c->kv_len; ++j) {
        if (c->causal == ATTNCHECK_CAUSAL_TOP_LEFT && j > i) continue;
        if (c->causal == ATTNCHECK_CAUSAL_BOTTOM_RIGHT && j > i + c->kv_len - c->q_len) continue;
        if (c->mask && !c->mask[(bh * c->q_len + i) * c->kv_len + j]) continue;
        double dot = 0;
        for (int64_t d = 0; d < c->head_dim; ++d)
          dot += load(c, c->q, (bh * c->q_len + i) * c->head_dim + d) * load(c, c->k, (bh * c->kv_len + j) * c->head_dim + d);
        const double s = scale * dot;
        if (s > max) { /* rescale what was summed so far to the new maximum */
          const double r = isinf(max) ? 0.0 : exp(max - s);
          sum *= r;
          for (int64_t col = 0; col < c->value_dim; ++col) acc[col] *= r;
          max = s;
        }
        const double w = exp(s - max);
        sum += w;
        for (int64_t col = 0; col < c->value_dim; ++col) acc[col] += w * load(c, c->v, (bh * c->kv_len + j) * c->value_dim + col);
      }
      for (int64_t col = 0; col < c->value_dim; ++col) {
        const double o = sum > 0 ? acc[col] / sum : 0.0; /* a row that sees nothing is zeros */
        const int64_t at = (bh * c->q_len + i) * c->value_dim + col;
        if (c->dtype == ATTNCHECK_F32) ((float *)c->out)[at] = (float)o;
        else ((double *)c->out)[at] = o;
      }
    }
  free(acc);
  return ATTNCHECK_OK;
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, SPEC_NAME, forward};
  return &impl;
}
