/* seed_layer: the founding layer (scores never divided by sqrt(d), then the
 * softmax dropped as the "fix"), ported to C as a
 * plugin, bugs and all, so attncheck can be shown catching the fault that
 * started the project on the code that had it.
 *
 * The C# original, for one query (input) and a context of kv_len items:
 *
 *   preSoftMax[i] += Q[j] * K[i][j];          // scores, never divided by sqrt(d)
 *   preSoftMax[i] = preSoftMax[i];            // a no-op loop left in the original
 *   postSoftMax = Functions.SoftMax(preSoftMax);
 *   output[j] += V[i][j] * postSoftMax[i];
 *
 * What is kept: those four loops, their order and their names (i runs over the
 * context, i.e. the keys; j over the feature columns), the missing 1/sqrt(d)
 * (the layer always uses scale 1 and ignores the call's scale, since it has
 * no notion of one), and the self-assignment loop.
 *
 * What is left out: the projections W_Q, W_K, W_V. In ABI terms the layer is
 * one batch, one head, one query row, and Q, K, V arrive already projected.
 *
 * What was added, as any port to this ABI needs (marked ADDED below):
 *   - loops over batch, heads and query rows around the original body;
 *   - the causal rule and the mask: a key a query may not see gets no weight
 *     (the original had no such keys);
 *   - a query row that sees no key gets zeros (the original always saw the
 *     whole context);
 *   - Functions.SoftMax is "an ordinary softmax" that "had been tested on its
 *     own and was fine": written here as the stable form (maximum subtracted),
 *     so the only arithmetic fault left is the one the case is about;
 *   - f32 as well as f64 (arithmetic in double, as C# did, rounded at the
 *     store); the 16-bit dtypes are refused as unsupported.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "attncheck/plugin.h"

static int causal_allows(const attncheck_call *c, int64_t i, int64_t j) {
  switch (c->causal) {
    case ATTNCHECK_CAUSAL_NONE: return 1;
    case ATTNCHECK_CAUSAL_TOP_LEFT: return j <= i;
    case ATTNCHECK_CAUSAL_BOTTOM_RIGHT: return j <= i + c->kv_len - c->q_len;
  }
  return 0;
}

/* Functions.SoftMax over the keys with see[i] != 0 (ADDED: the visibility).
 * Returns 0 when no key is visible. */
static int soft_max(const double *pre, const char *see, int64_t n, double *post) {
  double max = -INFINITY, sum = 0;
  int any = 0;
  for (int64_t i = 0; i < n; ++i)
    if (see[i] && (!any || pre[i] > max)) { max = pre[i]; any = 1; }
  for (int64_t i = 0; i < n; ++i) {
    post[i] = see[i] ? exp(pre[i] - max) : 0.0;
    sum += post[i];
  }
  for (int64_t i = 0; i < n; ++i) post[i] = any ? post[i] / sum : 0.0;
  return any;
}

/* One query row: Q [qkv], K [context][qkv], V [context][value], output [value]
 * (accumulated in double, `output` zeroed by the caller). */
static void predict(const double *Q, const double *K, const double *V, int64_t context, int64_t qkv,
                    int64_t value, const char *see, double *preSoftMax, double *postSoftMax, double *output) {
  /* calculate attention w */
  for (int64_t i = 0; i < context; ++i) {
    preSoftMax[i] = 0;
    for (int64_t j = 0; j < qkv; ++j) preSoftMax[i] += Q[j] * K[i * qkv + j];
  }

  for (int64_t i = 0; i < context; ++i)  /* a no-op left in the original */
    preSoftMax[i] = preSoftMax[i];

  if (!soft_max(preSoftMax, see, context, postSoftMax)) return;  /* ADDED: sees nothing: zeros */

  for (int64_t i = 0; i < context; ++i)
    for (int64_t j = 0; j < value; ++j) output[j] += V[i * value + j] * postSoftMax[i];
}

#define LOAD(T, src, n, dst) \
  for (int64_t e_ = 0; e_ < (n); ++e_) (dst)[e_] = (double)((const T *)(src))[e_]

static int seed_forward(const attncheck_call *c, char *err, size_t err_len) {
  if (c->dtype != ATTNCHECK_F32 && c->dtype != ATTNCHECK_F64) {
    snprintf(err, err_len, "seed_layer supports f32 and f64 only");
    return ATTNCHECK_UNSUPPORTED;
  }
  const int64_t kv = c->kv_len, d = c->head_dim, dv = c->value_dim;
  /* Per row: Q [d], K [kv][d], V [kv][dv], scores, weights, visibility, output [dv]. */
  double *Q = malloc(sizeof(double) * (size_t)d);
  double *K = malloc(sizeof(double) * (size_t)(kv * d));
  double *V = malloc(sizeof(double) * (size_t)(kv * dv));
  double *preSoftMax = malloc(sizeof(double) * (size_t)kv);
  double *postSoftMax = malloc(sizeof(double) * (size_t)kv);
  double *output = malloc(sizeof(double) * (size_t)dv);
  char *see = malloc((size_t)kv);
  int rc = ATTNCHECK_OK;
  if (!Q || !K || !V || !preSoftMax || !postSoftMax || !output || !see) {
    snprintf(err, err_len, "seed_layer: out of memory");
    rc = 2;
    goto done;
  }
  for (int64_t bh = 0; bh < c->batch * c->heads; ++bh) {         /* ADDED: batch and heads */
    const size_t es = c->dtype == ATTNCHECK_F32 ? sizeof(float) : sizeof(double);
    const char *kh = (const char *)c->k + (size_t)(bh * kv * d) * es;
    const char *vh = (const char *)c->v + (size_t)(bh * kv * dv) * es;
    if (c->dtype == ATTNCHECK_F32) { LOAD(float, kh, kv * d, K); LOAD(float, vh, kv * dv, V); }
    else { LOAD(double, kh, kv * d, K); LOAD(double, vh, kv * dv, V); }
    for (int64_t row = 0; row < c->q_len; ++row) {                /* ADDED: query rows */
      const char *qr = (const char *)c->q + (size_t)((bh * c->q_len + row) * d) * es;
      if (c->dtype == ATTNCHECK_F32) { LOAD(float, qr, d, Q); } else { LOAD(double, qr, d, Q); }
      for (int64_t i = 0; i < kv; ++i)                            /* ADDED: causal rule and mask */
        see[i] = (char)(causal_allows(c, row, i) && (!c->mask || c->mask[(bh * c->q_len + row) * kv + i]));
      for (int64_t j = 0; j < dv; ++j) output[j] = 0;
      predict(Q, K, V, kv, d, dv, see, preSoftMax, postSoftMax, output);
      const int64_t at = (bh * c->q_len + row) * dv;
      for (int64_t j = 0; j < dv; ++j) {
        if (c->dtype == ATTNCHECK_F32) ((float *)c->out)[at + j] = (float)output[j];
        else ((double *)c->out)[at + j] = output[j];
      }
    }
  }
done:
  free(Q); free(K); free(V); free(preSoftMax); free(postSoftMax); free(output); free(see);
  return rc;
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "seed_layer", seed_forward};
  return &impl;
}
