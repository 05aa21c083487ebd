/* A version-2 test plugin for the plugin host's transport of v2 calls: it
 * declares every feature and "computes" out[b][h][i][c] = q[b][h][i][c] (the
 * tests give value_dim == head_dim) and lse[b][h][i] = i + 0.5, for the rows
 * that exist, reading and writing only through the views' strides. So a test
 * sees, element by element, whether strides, lengths and the lse pointer
 * arrived intact. Variants (compile definitions) misbehave in one way each:
 *   V2_WRITE_GAP          also writes the element slot just past each row (a gap)
 *   V2_WRITE_PADDING_ROW  also writes row q_lens[b] when it is padding
 *   V2_WRONG_ABI          reports abi_version 1 from attncheck_plugin_v2
 *   V2_UNKNOWN_FEATURES   declares a bit no feature names
 *   V2_WITH_V1            also exports a v1 entry that fails every call */
#include <string.h>

#include "attncheck/plugin_v2.h"

static double load(const attncheck_call_v2 *c, const attncheck_view *v, int64_t b, int64_t h, int64_t r, int64_t x) {
  const int64_t at = b * v->stride[0] + h * v->stride[1] + r * v->stride[2] + x * v->stride[3];
  if (c->dtype == ATTNCHECK_F64) return ((const double *)v->data)[at];
  return ((const float *)v->data)[at];
}

static void store(const attncheck_call_v2 *c, int64_t b, int64_t h, int64_t r, int64_t x, double value) {
  const attncheck_out_view *o = &c->out;
  const int64_t at = b * o->stride[0] + h * o->stride[1] + r * o->stride[2] + x * o->stride[3];
  if (c->dtype == ATTNCHECK_F64) ((double *)o->data)[at] = value;
  else ((float *)o->data)[at] = (float)value;
}

static int echo_forward(const attncheck_call_v2 *c, char *err, size_t err_len) {
  if (c->dtype != ATTNCHECK_F32 && c->dtype != ATTNCHECK_F64) {
    if (err && err_len) strncpy(err, "echo: f32 and f64 only", err_len - 1);
    return ATTNCHECK_UNSUPPORTED;
  }
  for (int64_t b = 0; b < c->batch; ++b) {
    const int64_t lq = c->q_lens ? c->q_lens[b] : c->q_len;
    for (int64_t h = 0; h < c->heads; ++h) {
      for (int64_t i = 0; i < lq; ++i) {
        for (int64_t x = 0; x < c->value_dim; ++x) store(c, b, h, i, x, load(c, &c->q, b, h, i, x));
#ifdef V2_WRITE_GAP
        if (c->out.stride[2] > c->value_dim) store(c, b, h, i, c->value_dim, 1.0);
#endif
        if (c->lse) c->lse[(b * c->heads + h) * c->q_len + i] = (float)i + 0.5f;
      }
#ifdef V2_WRITE_PADDING_ROW
      if (lq < c->q_len) store(c, b, h, lq, 0, 2.0);
#endif
    }
  }
  return ATTNCHECK_OK;
}

#ifdef V2_UNKNOWN_FEATURES
#define ECHO_FEATURES (((1u << 11) - 1) | (1u << 20))
#else
#define ECHO_FEATURES ((1u << 11) - 1)
#endif

#ifdef V2_WRONG_ABI
#define ECHO_ABI 1u
#else
#define ECHO_ABI ATTNCHECK_ABI_VERSION_2
#endif

static const attncheck_impl_v2 kEcho = {ECHO_ABI, ECHO_FEATURES, "v2-echo", echo_forward, NULL};

const attncheck_impl_v2 *attncheck_plugin_v2(void) { return &kEcho; }

#ifdef V2_WITH_V1
static int refuse_v1(const attncheck_call *call, char *err, size_t err_len) {
  (void)call;
  if (err && err_len) strncpy(err, "the v1 entry must not be used when v2 is present", err_len - 1);
  return 7;
}
static const attncheck_impl kV1 = {ATTNCHECK_ABI_VERSION, "v2-echo (v1 entry)", refuse_v1};
const attncheck_impl *attncheck_plugin_v1(void) { return &kV1; }
#endif
