/* The correct computation the misbehaving test plugins share: each of them is
 * right on every call except the shapes that trigger its one fault, so a
 * test can show the host recovering with a correct answer on the next call.
 * f32 and f64 only (arithmetic in double); other dtypes are unsupported.
 *   q [bh][q_len][head_dim], k [bh][kv_len][head_dim], v [bh][kv_len][value_dim],
 *   mask [bh][q_len][kv_len] (optional), out [bh][q_len][value_dim]. */
#ifndef ATTNCHECK_TEST_ATTENTION_H
#define ATTNCHECK_TEST_ATTENTION_H

#include <math.h>
#include <stdio.h>

#include "attncheck/plugin.h"

static double test_load(const attncheck_call *c, const void *base, int64_t i) {
  return c->dtype == ATTNCHECK_F32 ? (double)((const float *)base)[i] : ((const double *)base)[i];
}

static int test_visible(const attncheck_call *c, int64_t bh, int64_t i, int64_t j) {
  if (c->causal == ATTNCHECK_CAUSAL_TOP_LEFT && j > i) return 0;
  if (c->causal == ATTNCHECK_CAUSAL_BOTTOM_RIGHT && j > i + c->kv_len - c->q_len) return 0;
  return !c->mask || c->mask[(bh * c->q_len + i) * c->kv_len + j];
}

/* Writes every element of out; returns ATTNCHECK_OK or ATTNCHECK_UNSUPPORTED. */
static int test_attention(const attncheck_call *c, char *err, size_t err_len) {
  if (c->dtype != ATTNCHECK_F32 && c->dtype != ATTNCHECK_F64) {
    snprintf(err, err_len, "test plugins support f32 and f64 only");
    return ATTNCHECK_UNSUPPORTED;
  }
  const double scale = isnan(c->scale) ? 1.0 / sqrt((double)c->head_dim) : c->scale;
  for (int64_t bh = 0; bh < c->batch * c->heads; ++bh) {
    for (int64_t i = 0; i < c->q_len; ++i) {
      double max = -INFINITY;
      for (int64_t j = 0; j < c->kv_len; ++j) {  /* pass 1: the largest visible logit */
        if (!test_visible(c, bh, i, j)) continue;
        double dot = 0;
        for (int64_t d = 0; d < c->head_dim; ++d)
          dot += test_load(c, c->q, (bh * c->q_len + i) * c->head_dim + d) *
                 test_load(c, c->k, (bh * c->kv_len + j) * c->head_dim + d);
        if (scale * dot > max) max = scale * dot;
      }
      for (int64_t col = 0; col < c->value_dim; ++col) {  /* pass 2: weights times values */
        double sum = 0, acc = 0;
        for (int64_t j = 0; j < c->kv_len; ++j) {
          if (!test_visible(c, bh, i, j)) continue;
          double dot = 0;
          for (int64_t d = 0; d < c->head_dim; ++d)
            dot += test_load(c, c->q, (bh * c->q_len + i) * c->head_dim + d) *
                   test_load(c, c->k, (bh * c->kv_len + j) * c->head_dim + d);
          const double w = exp(scale * dot - max);
          sum += w;
          acc += w * test_load(c, c->v, (bh * c->kv_len + j) * c->value_dim + col);
        }
        const double o = sum > 0 ? acc / sum : 0.0;  /* a row that sees nothing is zeros */
        const int64_t at = (bh * c->q_len + i) * c->value_dim + col;
        if (c->dtype == ATTNCHECK_F32) ((float *)c->out)[at] = (float)o;
        else ((double *)c->out)[at] = o;
      }
    }
  }
  return ATTNCHECK_OK;
}

#endif
