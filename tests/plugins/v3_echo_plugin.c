/* A version-3 test plugin for the plugin host's loading and calling of v3
 * plugins (tests/plugins/plugin_host_v3_test.cpp). Its forward first checks
 * that every field version 3 adds holds its neutral value (what the checker
 * sends a plugin that declares no v3 feature; error 9 naming the field
 * otherwise), then echoes as v2_echo_plugin.c does: out[b][h][i][c] =
 * q[b][h][i][c] (value_dim == head_dim in the tests), lse[b][h][i] = i + 0.5,
 * for the rows that exist, through the views' strides. Its backward (present
 * with V3_BACKWARD) writes dq = dout, dk = dv = 0 for the live rows and keys.
 * Variants (compile definitions), one each:
 *   V3_WITH_LOWER          also exports attncheck_plugin_v2 and _v1 entries that
 *                          fail every call (error 7): the v3 entry must be the one called
 *   V3_WRONG_ABI           reports abi_version 2 from attncheck_plugin_v3
 *   V3_NULL_FORWARD        forward is NULL
 *   V3_FEATURES=x, V3_KV_FORMATS=x, V3_NUMERICS=x, V3_PROMISES=x
 *                          declare those words (default: every v2 feature, 0, 0, 0)
 *   V3_BACKWARD            has a backward */
#include <string.h>

#include "attncheck/plugin_v3.h"

static void say(char *err, size_t err_len, const char *what) {
  if (err && err_len) {
    strncpy(err, what, err_len - 1);
    err[err_len - 1] = 0;
  }
}

static double load(const attncheck_call_v2 *c, const attncheck_view *v, int64_t b, int64_t h, int64_t r, int64_t x) {
  const int64_t at = b * v->stride[0] + h * v->stride[1] + r * v->stride[2] + x * v->stride[3];
  if (c->dtype == ATTNCHECK_F64) return ((const double *)v->data)[at];
  return ((const float *)v->data)[at];
}

static void store(const attncheck_call_v2 *c, const attncheck_out_view *o, int64_t b, int64_t h, int64_t r,
                  int64_t x, double value) {
  const int64_t at = b * o->stride[0] + h * o->stride[1] + r * o->stride[2] + x * o->stride[3];
  if (c->dtype == ATTNCHECK_F64) ((double *)o->data)[at] = value;
  else ((float *)o->data)[at] = (float)value;
}

/* The name of the first added field that is not neutral; NULL when all are. */
static const char *not_neutral(const attncheck_call_v3 *c) {
  if (c->cu_seqlens_q) return "v3 field cu_seqlens_q is not NULL";
  if (c->cu_seqlens_k) return "v3 field cu_seqlens_k is not NULL";
  if (c->total_q || c->total_k) return "v3 field total_q or total_k is not 0";
  if (c->block_table) return "v3 field block_table is not NULL";
  if (c->max_pages_per_seq || c->num_pages || c->page_size) return "v3 paged sizes are not 0";
  if (c->k_format != ATTNCHECK_KV_DTYPE || c->v_format != ATTNCHECK_KV_DTYPE) return "v3 formats are not DTYPE";
  if (c->k_scale.data || c->v_scale.data) return "v3 scale data is not NULL";
  for (int a = 0; a < 3; ++a)
    if (c->k_scale.stride[a] || c->v_scale.stride[a]) return "v3 scale strides are not 0";
  if (c->alibi_batch_stride) return "v3 field alibi_batch_stride is not 0";
  return NULL;
}

/* (unused in the V3_NULL_FORWARD variant) */
__attribute__((unused)) static int echo_forward(const attncheck_call_v3 *call, char *err, size_t err_len) {
  const attncheck_call_v2 *c = &call->v2;
  const char *why = not_neutral(call);
  if (why) {
    say(err, err_len, why);
    return 9;
  }
  if (c->dtype != ATTNCHECK_F32 && c->dtype != ATTNCHECK_F64) {
    say(err, err_len, "v3 echo: f32 and f64 only");
    return ATTNCHECK_UNSUPPORTED;
  }
  for (int64_t b = 0; b < c->batch; ++b) {
    const int64_t lq = c->q_lens ? c->q_lens[b] : c->q_len;
    for (int64_t h = 0; h < c->heads; ++h)
      for (int64_t i = 0; i < lq; ++i) {
        for (int64_t x = 0; x < c->value_dim; ++x) store(c, &c->out, b, h, i, x, load(c, &c->q, b, h, i, x));
#ifdef V3_ADDRESS_IN_LSE
        /* where out lies, modulo 2^16 bytes (exact in float): Implementation::shift_buffers moves it */
        if (c->lse) c->lse[(b * c->heads + h) * c->q_len + i] = (float)((uintptr_t)c->out.data % 65536u);
#else
        if (c->lse) c->lse[(b * c->heads + h) * c->q_len + i] = (float)i + 0.5f;
#endif
      }
  }
  return ATTNCHECK_OK;
}

#ifdef V3_BACKWARD
static int echo_backward(const attncheck_call_v3 *call, const attncheck_grad *g, char *err, size_t err_len) {
  const attncheck_call_v2 *c = &call->v2;
  const int64_t group = c->heads / c->kv_heads;
  const char *why = not_neutral(call);
  if (why) {
    say(err, err_len, why);
    return 9;
  }
  for (int64_t b = 0; b < c->batch; ++b) {
    const int64_t lq = c->q_lens ? c->q_lens[b] : c->q_len;
    const int64_t lk = c->kv_lens ? c->kv_lens[b] : c->kv_len;
    for (int64_t h = 0; h < c->heads; ++h)
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t x = 0; x < c->head_dim; ++x) store(c, &g->dq, b, h, i, x, load(c, &g->dout, b, h, i, x));
    for (int64_t h = 0; h < c->heads / group; ++h)
      for (int64_t j = 0; j < lk; ++j) {
        for (int64_t x = 0; x < c->head_dim; ++x) store(c, &g->dk, b, h, j, x, 0.0);
        for (int64_t x = 0; x < c->value_dim; ++x) store(c, &g->dv, b, h, j, x, 0.0);
      }
  }
  return ATTNCHECK_OK;
}
#define ECHO_BACKWARD echo_backward
#else
#define ECHO_BACKWARD NULL
#endif

#ifndef V3_FEATURES
#define V3_FEATURES ((1u << 11) - 1)
#endif
#ifndef V3_KV_FORMATS
#define V3_KV_FORMATS 0u
#endif
#ifndef V3_NUMERICS
#define V3_NUMERICS 0u
#endif
#ifndef V3_PROMISES
#define V3_PROMISES 0u
#endif
#ifdef V3_WRONG_ABI
#define ECHO_ABI ATTNCHECK_ABI_VERSION_2
#else
#define ECHO_ABI ATTNCHECK_ABI_VERSION_3
#endif
#ifdef V3_NULL_FORWARD
#define ECHO_FORWARD NULL
#else
#define ECHO_FORWARD echo_forward
#endif

static const attncheck_impl_v3 kEcho = {ECHO_ABI,    V3_FEATURES, V3_KV_FORMATS, V3_NUMERICS,
                                         V3_PROMISES, "v3-echo",   ECHO_FORWARD,  ECHO_BACKWARD};

const attncheck_impl_v3 *attncheck_plugin_v3(void) { return &kEcho; }

#ifdef V3_WITH_LOWER
static int refuse_v2(const attncheck_call_v2 *call, char *err, size_t err_len) {
  (void)call;
  say(err, err_len, "the v2 entry must not be used when v3 is present");
  return 7;
}
static const attncheck_impl_v2 kV2 = {ATTNCHECK_ABI_VERSION_2, (1u << 11) - 1, "v3-echo (v2 entry)", refuse_v2, NULL};
const attncheck_impl_v2 *attncheck_plugin_v2(void) { return &kV2; }

static int refuse_v1(const attncheck_call *call, char *err, size_t err_len) {
  (void)call;
  say(err, err_len, "the v1 entry must not be used when v3 is present");
  return 7;
}
static const attncheck_impl kV1 = {ATTNCHECK_ABI_VERSION, "v3-echo (v1 entry)", refuse_v1};
const attncheck_impl *attncheck_plugin_v1(void) { return &kV1; }
#endif
