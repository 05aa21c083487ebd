/* A version-2 test plugin with a backward entry, for the plugin host's
 * transport of backward calls. Its forward is v2_echo_plugin.c's (every
 * feature declared; out[b][h][i][c] = q[b][h][i][c], the tests give
 * value_dim == head_dim; lse[b][h][i] = i + 0.5 for the rows that exist).
 * Its backward is that forward's exact gradient of sum(out * dout):
 *   dq[b][h][i][d] = dout[b][h][i][d] for rows that exist,
 *   dk = dv = 0 for keys that exist,
 * read and written only through the views' strides. Before writing it checks
 * that out and lse hold its forward's values (they are backward's inputs) and
 * answers 9 otherwise. So a test sees, element by element, whether the
 * gradient views, dout and the forward's outputs arrived intact.
 * Variants (compile definitions) misbehave in backward in one way each:
 *   GRAD_WRITE_GAP     also writes the element slot just past each row of dq (a gap)
 *   GRAD_WRITE_OUT     also adds 1 to out[0][0][0][0] (an input of backward)
 *   GRAD_SKIP_DK       leaves dk[b=0][h=1][j=2][d=0] unwritten
 *   GRAD_STRAY         also writes a byte 8 KiB past dv's last element (beyond its guard zone)
 *   GRAD_CRASH         dereferences NULL (SIGSEGV)
 *   GRAD_HANG          never returns */
#include <stdint.h>
#include <string.h>

#include "attncheck/plugin_v2.h"

static int64_t at(const int64_t *stride, int64_t b, int64_t h, int64_t r, int64_t x) {
  return b * stride[0] + h * stride[1] + r * stride[2] + x * stride[3];
}

static double load(attncheck_dtype t, const void *data, int64_t i) {
  return t == ATTNCHECK_F64 ? ((const double *)data)[i] : ((const float *)data)[i];
}

static void store(attncheck_dtype t, void *data, int64_t i, double value) {
  if (t == ATTNCHECK_F64) ((double *)data)[i] = value;
  else ((float *)data)[i] = (float)value;
}

static int64_t q_len_of(const attncheck_call_v2 *c, int64_t b) { return c->q_lens ? c->q_lens[b] : c->q_len; }
static int64_t kv_len_of(const attncheck_call_v2 *c, int64_t b) { return c->kv_lens ? c->kv_lens[b] : c->kv_len; }

static int say(char *err, size_t err_len, const char *what, int rc) {
  if (err && err_len) strncpy(err, what, err_len - 1);
  return rc;
}

static int grad_forward(const attncheck_call_v2 *c, char *err, size_t err_len) {
  if (c->dtype != ATTNCHECK_F32 && c->dtype != ATTNCHECK_F64)
    return say(err, err_len, "grad: f32 and f64 only", ATTNCHECK_UNSUPPORTED);
  for (int64_t b = 0; b < c->batch; ++b)
    for (int64_t h = 0; h < c->heads; ++h)
      for (int64_t i = 0; i < q_len_of(c, b); ++i) {
        for (int64_t x = 0; x < c->value_dim; ++x)
          store(c->dtype, c->out.data, at(c->out.stride, b, h, i, x), load(c->dtype, c->q.data, at(c->q.stride, b, h, i, x)));
        if (c->lse) c->lse[(b * c->heads + h) * c->q_len + i] = (float)i + 0.5f;
      }
  return ATTNCHECK_OK;
}

/* Out and lse hold what grad_forward wrote for this call. */
static int forward_outputs_intact(const attncheck_call_v2 *c) {
  for (int64_t b = 0; b < c->batch; ++b)
    for (int64_t h = 0; h < c->heads; ++h)
      for (int64_t i = 0; i < q_len_of(c, b); ++i) {
        for (int64_t x = 0; x < c->value_dim; ++x)
          if (load(c->dtype, c->out.data, at(c->out.stride, b, h, i, x)) !=
              load(c->dtype, c->q.data, at(c->q.stride, b, h, i, x)))
            return 0;
        if (c->lse && c->lse[(b * c->heads + h) * c->q_len + i] != (float)i + 0.5f) return 0;
      }
  return 1;
}

/* Not instrumented: under the sanitizer build UBSan would report the null
 * store and exit with a status instead of letting the SIGSEGV happen. */
__attribute__((no_sanitize("address", "undefined")))
static int grad_backward(const attncheck_call_v2 *c, const attncheck_grad *g, char *err, size_t err_len) {
#ifdef GRAD_CRASH
  {
    volatile uintptr_t address = 0; /* volatile: a store, not a trap instruction (SIGILL) */
    *(volatile int *)address = 1;
  }
#endif
#ifdef GRAD_HANG
  {
    volatile int forever = 1;
    while (forever) {
    }
  }
#endif
  if (!forward_outputs_intact(c)) return say(err, err_len, "grad: out or lse is not what forward wrote", 9);
  for (int64_t b = 0; b < c->batch; ++b) {
    for (int64_t h = 0; h < c->heads; ++h)
      for (int64_t i = 0; i < q_len_of(c, b); ++i) {
        for (int64_t d = 0; d < c->head_dim; ++d)
          store(c->dtype, g->dq.data, at(g->dq.stride, b, h, i, d), load(c->dtype, g->dout.data, at(g->dout.stride, b, h, i, d)));
#ifdef GRAD_WRITE_GAP
        if (g->dq.stride[2] > c->head_dim) store(c->dtype, g->dq.data, at(g->dq.stride, b, h, i, c->head_dim), 1.0);
#endif
      }
    for (int64_t h = 0; h < c->kv_heads; ++h)
      for (int64_t j = 0; j < kv_len_of(c, b); ++j) {
        for (int64_t d = 0; d < c->head_dim; ++d) {
#ifdef GRAD_SKIP_DK
          if (b == 0 && h == 1 && j == 2 && d == 0) continue;
#endif
          store(c->dtype, g->dk.data, at(g->dk.stride, b, h, j, d), 0.0);
        }
        for (int64_t x = 0; x < c->value_dim; ++x) store(c->dtype, g->dv.data, at(g->dv.stride, b, h, j, x), 0.0);
      }
  }
#ifdef GRAD_STRAY
  {
    const int64_t last = at(g->dv.stride, c->batch - 1, c->kv_heads - 1, c->kv_len - 1, c->value_dim - 1);
    const int64_t bytes = c->dtype == ATTNCHECK_F64 ? 8 : 4;
    ((unsigned char *)g->dv.data)[(last + 1) * bytes + 8192] ^= 0x5A;
  }
#endif
#ifdef GRAD_WRITE_OUT
  store(c->dtype, c->out.data, 0, load(c->dtype, c->out.data, 0) + 1.0);
#endif
  return ATTNCHECK_OK;
}

static const attncheck_impl_v2 kGrad = {ATTNCHECK_ABI_VERSION_2, (1u << 11) - 1, "v2-grad", grad_forward,
                                        grad_backward};

const attncheck_impl_v2 *attncheck_plugin_v2(void) { return &kGrad; }
