/* example_attention_v2: a correct attncheck plugin for ABI version 2, in plain C99.
 *
 * Copy this file to start a plugin that takes what kernels take today. It declares
 * every feature of the pinned ABI (attncheck/plugin_v2.h, spec/plugin-abi-v2.md) and
 * implements each exactly as the spec states it, one step per function, for reading
 * rather than speed:
 *   - strided views of q, k, v, out in any axis order, with gaps (STRIDES);
 *   - grouped-query heads: query head h reads kv head h / (heads / kv_heads) (GQA);
 *   - per-sequence lengths: padding rows and keys are never read, padding rows of out
 *     and lse never written (LENGTHS);
 *   - causal rules, sliding windows and ALiBi aligned to the diagonal d_i (CAUSAL,
 *     WINDOW, ALIBI), the boolean mask and the additive bias read through their
 *     strides, stride 0 broadcasting and -inf hiding a key (MASK, BIAS);
 *   - logit soft-capping (SOFTCAP), attention sinks (SINKS), the natural-log
 *     log-sum-exp (LSE);
 *   - f32, f64, f16 and bf16, the 16-bit conversions written out below.
 * It has no gradients: backward is NULL. It also exports attncheck_plugin_v1, a thin
 * translation of a v1 call into a dense v2 call, so that a checker that only knows
 * version 1 can load it too; a version-2 checker uses attncheck_plugin_v2.
 *
 * Build (what plugins/CMakeLists.txt does):
 *   cc -std=c99 -O2 -shared -fPIC -I<attncheck>/include example_attention_v2.c \
 *      -o libexample_attention_v2.so -lm
 * Check it:
 *   attncheck check --plugin ./libexample_attention_v2.so
 *
 * Tensors (views: element (b, h, r, c) at data + b*s[0] + h*s[1] + r*s[2] + c*s[3],
 * counted in elements; mask and bias may have stride 0 on axes 0 to 2):
 *   q    [batch][heads][q_len][head_dim]
 *   k    [batch][kv_heads][kv_len][head_dim]
 *   v    [batch][kv_heads][kv_len][value_dim]
 *   mask [batch][heads][q_len][kv_len]   uint8, nonzero = may attend (data NULL: none)
 *   bias [batch][heads][q_len][kv_len]   in the call's dtype (data NULL: none)
 *   out  [batch][heads][q_len][value_dim]
 *   lse  [batch][heads][q_len]           float, dense (NULL: not requested)
 *
 * Precision. Every element is widened to double on load and all arithmetic (dot
 * products, tanh, exp, sums, log) is done in double; each result is rounded once, when
 * it is stored in the call's dtype (and lse in float). For f32, f16 and bf16 inputs the
 * products of two inputs are exact in double (at most 2 x 24 significant bits <= 53) and
 * the accumulated rounding, about n * 2^-53, stays far below the one rounding of the
 * store; for f64 double is the storage precision, which the checker's bound assumes.
 * Float accumulation would also be allowed for the 16-bit types, but double keeps the
 * example free of a second error analysis. Softmax subtracts the row maximum (sink
 * included) so that no exp() overflows.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "attncheck/plugin_v2.h"

/* ---- 16-bit floating point, written out ---------------------------------------------
 * f16 (IEEE binary16) and bf16 share a layout: 1 sign bit, then E exponent bits, then
 * M stored mantissa bits, with E + M = 15 (f16: M = 10, bias 15; bf16: M = 7, bias 127).
 * The two functions below take M and the bias, so one body serves both formats. */

/* The value of a 16-bit pattern (exact: every f16 and bf16 value is a double). */
static double half_bits_to_double(uint16_t bits, int mant_bits, int exp_bias) {
  const int exp_all_ones = (1 << (15 - mant_bits)) - 1;
  const int exponent = (bits >> mant_bits) & exp_all_ones;
  const int fraction = bits & ((1 << mant_bits) - 1);
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  if (exponent == exp_all_ones) return fraction ? NAN : sign * INFINITY;
  if (exponent == 0) /* zero or subnormal: no implicit leading 1 */
    return sign * ldexp((double)fraction, 1 - exp_bias - mant_bits);
  return sign * ldexp((double)(fraction + (1 << mant_bits)), exponent - exp_bias - mant_bits);
}

/* x rounded to the nearest 16-bit value, ties to even (the IEEE default), as bits.
 * Rounding straight from double avoids the double rounding double -> float -> 16 bits,
 * which is off by one unit in rare ties. Scaling by powers of two is exact, so rint()
 * of x / quantum is the correctly rounded significand. */
static uint16_t double_to_half_bits(double x, int mant_bits, int exp_bias) {
  const uint16_t sign = signbit(x) ? 0x8000 : 0;
  const uint16_t exp_field_all_ones = (uint16_t)(((1 << (15 - mant_bits)) - 1) << mant_bits);
  if (isnan(x)) return (uint16_t)(sign | exp_field_all_ones | (1 << (mant_bits - 1))); /* quiet NaN */
  if (isinf(x)) return (uint16_t)(sign | exp_field_all_ones);
  const double a = fabs(x);
  const int min_exponent = 1 - exp_bias; /* of the smallest normal binade */
  int e;                                 /* a is in [2^e, 2^(e+1)) */
  (void)frexp(a, &e);
  e -= 1;
  if (a == 0 || e < min_exponent) e = min_exponent; /* subnormals share its quantum */
  /* The significand in units of the quantum 2^(e - mant_bits): in [0, 2^(mant_bits+1)]. */
  double significand = rint(ldexp(a, mant_bits - e));
  if (significand == ldexp(1.0, mant_bits + 1)) { /* rounded up into the next binade */
    significand /= 2;
    e += 1;
  }
  if (e > exp_bias) return (uint16_t)(sign | exp_field_all_ones); /* overflow: infinity */
  /* Normal: biased exponent e + bias and significand - 2^M stored. Written as
   * ((e + bias - 1) << M) + significand it also encodes subnormals (e = min_exponent,
   * significand < 2^M, exponent field 0) and the carry of a subnormal into the
   * smallest normal (significand = 2^M). */
  return (uint16_t)(sign | (((e + exp_bias - 1) << mant_bits) + (int)significand));
}

/* ---- reading and writing elements of a view ------------------------------------------ */

/* Offset of element (b, h, r, c), in elements, in a view with `stride`. */
static int64_t offset_of(const int64_t stride[4], int64_t b, int64_t h, int64_t r, int64_t c) {
  return b * stride[0] + h * stride[1] + r * stride[2] + c * stride[3];
}

/* Element `at` of an array of `dtype`, widened to double. */
static double load(const void *data, attncheck_dtype dtype, int64_t at) {
  switch (dtype) {
    case ATTNCHECK_F32: return ((const float *)data)[at];
    case ATTNCHECK_F64: return ((const double *)data)[at];
    case ATTNCHECK_F16: return half_bits_to_double(((const uint16_t *)data)[at], 10, 15);
    case ATTNCHECK_BF16: return half_bits_to_double(((const uint16_t *)data)[at], 7, 127);
  }
  return NAN;
}

/* Stores x, rounded once to `dtype`, as element `at`. */
static void store(void *data, attncheck_dtype dtype, int64_t at, double x) {
  switch (dtype) {
    case ATTNCHECK_F32: ((float *)data)[at] = (float)x; break;
    case ATTNCHECK_F64: ((double *)data)[at] = x; break;
    case ATTNCHECK_F16: ((uint16_t *)data)[at] = double_to_half_bits(x, 10, 15); break;
    case ATTNCHECK_BF16: ((uint16_t *)data)[at] = double_to_half_bits(x, 7, 127); break;
  }
}

/* ---- the spec's visibility rule and logits --------------------------------------------- */

/* One query row (b, h, i), with what every key of it shares. */
typedef struct row {
  int64_t b, h, i;
  int64_t kv_h;     /* the kv head query head h reads */
  int64_t kv_len;   /* Lk: keys j < Lk exist, the rest is padding */
  int64_t diagonal; /* d_i: causal rule, window and ALiBi align to it */
} row;

/* Key j of row r is visible: it exists, and the causal rule, the window, the mask and
 * the bias all allow it. Only called for existing rows, and the mask and bias are read
 * only at existing keys, so their padding entries are never read. */
static int visible(const attncheck_call_v2 *c, const row *r, int64_t j) {
  if (j >= r->kv_len) return 0;
  if (c->causal != ATTNCHECK_CAUSAL_NONE && j > r->diagonal) return 0;
  if (c->window_left >= 0 && j < r->diagonal - c->window_left) return 0;
  if (c->window_right >= 0 && j > r->diagonal + c->window_right) return 0;
  if (c->mask.data &&
      !((const uint8_t *)c->mask.data)[offset_of(c->mask.stride, r->b, r->h, r->i, j)])
    return 0;
  if (c->bias.data) {
    /* Only -inf hides a key; a large finite negative bias leaves it visible. */
    const double bias = load(c->bias.data, c->dtype, offset_of(c->bias.stride, r->b, r->h, r->i, j));
    if (bias == -INFINITY) return 0;
  }
  return 1;
}

/* The logit z of visible key j: scaled dot product, then soft-cap, then bias, then
 * ALiBi, in this order (the spec's). */
static double logit(const attncheck_call_v2 *c, const row *r, int64_t j, double scale) {
  double dot = 0;
  for (int64_t d = 0; d < c->head_dim; ++d)
    dot += load(c->q.data, c->dtype, offset_of(c->q.stride, r->b, r->h, r->i, d)) *
           load(c->k.data, c->dtype, offset_of(c->k.stride, r->b, r->kv_h, j, d));
  double z = scale * dot;
  if (c->softcap > 0) z = c->softcap * tanh(z / c->softcap);
  if (c->bias.data) z += load(c->bias.data, c->dtype, offset_of(c->bias.stride, r->b, r->h, r->i, j));
  if (c->alibi_slopes) z -= (double)c->alibi_slopes[r->h] * fabs((double)(r->diagonal - j));
  return z;
}

/* ---- one query row ------------------------------------------------------------------- */

/* Scratch for one row, sized kv_len, reused for every row of a call. */
typedef struct scratch {
  int64_t *keys;  /* the visible keys S of the row, in order */
  double *weight; /* their logits z_j, then their unnormalised weights exp(z_j - max) */
} scratch;

/* out row (b, h, i) = sum_{j in S} p_j v_j and, when requested, its lse, with
 *   p_j = exp(z_j) / (exp(s) + sum_{k in S} exp(z_k)),  lse = log(exp(s) + sum exp(z_k))
 * where s is the sink (no exp(s) term without sinks). */
static void attend_row(const attncheck_call_v2 *c, const row *r, double scale, scratch *w) {
  const double sink = c->sinks ? (double)c->sinks[r->h] : -INFINITY;

  /* 1. The visible keys, their logits, and the row maximum. The sink takes part in
   *    the maximum: a sink far above every logit would otherwise overflow exp(s - max). */
  int64_t n = 0;
  double max = sink;
  for (int64_t j = 0; j < r->kv_len; ++j) {
    if (!visible(c, r, j)) continue;
    w->keys[n] = j;
    w->weight[n] = logit(c, r, j, scale);
    if (w->weight[n] > max) max = w->weight[n];
    ++n;
  }

  /* 2. A row that sees no key: out = 0 and lse = s (-inf without sinks), not 0/0. */
  if (n == 0) {
    for (int64_t col = 0; col < c->value_dim; ++col)
      store(c->out.data, c->dtype, offset_of(c->out.stride, r->b, r->h, r->i, col), 0.0);
    if (c->lse) c->lse[(r->b * c->heads + r->h) * c->q_len + r->i] = (float)sink;
    return;
  }

  /* 3. Unnormalised weights exp(z_j - max) <= 1 and their sum, the sink's term first
   *    (exp(-inf) = 0 without sinks). */
  double sum = exp(sink - max);
  for (int64_t t = 0; t < n; ++t) {
    w->weight[t] = exp(w->weight[t] - max);
    sum += w->weight[t];
  }

  /* 4. out row = sum_j weight_j v_j / sum. Only the visible keys' values are read. */
  for (int64_t col = 0; col < c->value_dim; ++col) {
    double acc = 0;
    for (int64_t t = 0; t < n; ++t)
      acc += w->weight[t] * load(c->v.data, c->dtype, offset_of(c->v.stride, r->b, r->kv_h, w->keys[t], col));
    store(c->out.data, c->dtype, offset_of(c->out.stride, r->b, r->h, r->i, col), acc / sum);
  }

  /* 5. lse = log(sum exp(z)) = max + log(sum exp(z - max)), natural log, in float. */
  if (c->lse) c->lse[(r->b * c->heads + r->h) * c->q_len + r->i] = (float)(max + log(sum));
}

/* ---- the call -------------------------------------------------------------------------- */

/* The length of batch b's queries (Lq) or keys (Lk): the per-batch length when given. */
static int64_t length_of(const int32_t *lens, int64_t b, int64_t full) {
  return lens ? (int64_t)lens[b] : full;
}

/* What the checker promises, checked anyway: a plugin copied from this file will meet
 * callers that are not the checker. Returns 0 with a message in err when the call is
 * malformed. */
static int call_is_valid(const attncheck_call_v2 *c, char *err, size_t err_len) {
  if (c->kv_heads <= 0 || c->heads % c->kv_heads != 0) {
    snprintf(err, err_len, "heads (%lld) must be a multiple of kv_heads (%lld)", (long long)c->heads,
             (long long)c->kv_heads);
    return 0;
  }
  for (int64_t b = 0; b < c->batch; ++b) {
    const int64_t lq = length_of(c->q_lens, b, c->q_len), lk = length_of(c->kv_lens, b, c->kv_len);
    if (lq < 0 || lq > c->q_len || lk < 0 || lk > c->kv_len) {
      snprintf(err, err_len, "batch %lld: lengths %lld/%lld outside 0..%lld/0..%lld", (long long)b, (long long)lq,
               (long long)lk, (long long)c->q_len, (long long)c->kv_len);
      return 0;
    }
  }
  return 1;
}

static int example_forward_v2(const attncheck_call_v2 *c, char *err, size_t err_len) {
  if (c->dtype != ATTNCHECK_F32 && c->dtype != ATTNCHECK_F64 && c->dtype != ATTNCHECK_F16 &&
      c->dtype != ATTNCHECK_BF16) {
    snprintf(err, err_len, "unknown dtype %d", (int)c->dtype);
    return ATTNCHECK_UNSUPPORTED;
  }
  if (!call_is_valid(c, err, err_len)) return 2; /* any value but OK and UNSUPPORTED is an error */

  /* NaN means "your default", which the ABI fixes at 1/sqrt(head_dim). */
  const double scale = isnan(c->scale) ? 1.0 / sqrt((double)c->head_dim) : c->scale;
  const int64_t group = c->heads / c->kv_heads; /* query heads per kv head */

  /* Scratch per call: the ABI promises fresh pointers each call, and calls may come from
   * a child process, so nothing is kept between calls. */
  const size_t n = (size_t)(c->kv_len > 0 ? c->kv_len : 1);
  scratch w = {(int64_t *)malloc(n * sizeof(int64_t)), (double *)malloc(n * sizeof(double))};
  if (!w.keys || !w.weight) {
    free(w.keys);
    free(w.weight);
    snprintf(err, err_len, "out of memory for %lld keys of scratch", (long long)c->kv_len);
    return 2;
  }

  for (int64_t b = 0; b < c->batch; ++b) {
    const int64_t lq = length_of(c->q_lens, b, c->q_len), lk = length_of(c->kv_lens, b, c->kv_len);
    for (int64_t h = 0; h < c->heads; ++h) {
      /* Rows i >= Lq are padding: neither read nor written, in out and in lse. */
      for (int64_t i = 0; i < lq; ++i) {
        row r;
        r.b = b;
        r.h = h;
        r.i = i;
        r.kv_h = h / group;
        r.kv_len = lk;
        /* TOP_LEFT aligns to the first key; BOTTOM_RIGHT and NONE to the last, so that
         * windows and ALiBi of a non-causal call sit where FlashAttention puts them. */
        r.diagonal = c->causal == ATTNCHECK_CAUSAL_TOP_LEFT ? i : i + lk - lq;
        attend_row(c, &r, scale, &w);
      }
    }
  }
  free(w.keys);
  free(w.weight);
  return ATTNCHECK_OK;
}

/* Every feature version 2 defines; no gradients. (attncheck's tests build it again with
 * EXAMPLE_V2_FEATURES set to one feature at a time, to see each checked alone.) The
 * struct is static: it must outlive the call. */
#ifndef EXAMPLE_V2_FEATURES
#define EXAMPLE_V2_FEATURES                                                                                    \
  (ATTNCHECK_FEATURE_MASK | ATTNCHECK_FEATURE_CAUSAL | ATTNCHECK_FEATURE_GQA | ATTNCHECK_FEATURE_STRIDES |     \
   ATTNCHECK_FEATURE_LENGTHS | ATTNCHECK_FEATURE_WINDOW | ATTNCHECK_FEATURE_SOFTCAP | ATTNCHECK_FEATURE_BIAS | \
   ATTNCHECK_FEATURE_ALIBI | ATTNCHECK_FEATURE_SINKS | ATTNCHECK_FEATURE_LSE)
#endif
const attncheck_impl_v2 *attncheck_plugin_v2(void) {
  static const attncheck_impl_v2 impl = {
      ATTNCHECK_ABI_VERSION_2,
      EXAMPLE_V2_FEATURES,
      "example_c_v2",
      example_forward_v2,
      NULL /* backward: no gradients */
  };
  return &impl;
}

/* ---- version 1, for checkers that only know it ------------------------------------------ */

/* A v1 call is a v2 call with every field neutral and dense row-major views:
 * strides of a [d0][d1][d2][d3] tensor are {d1*d2*d3, d2*d3, d3, 1}. */
static void dense_strides(int64_t stride[4], int64_t d1, int64_t d2, int64_t d3) {
  stride[3] = 1;
  stride[2] = d3;
  stride[1] = d2 * d3;
  stride[0] = d1 * d2 * d3;
}

static int example_forward_v1(const attncheck_call *c1, char *err, size_t err_len) {
  attncheck_call_v2 c = {0}; /* NULL pointers and zero softcap: neutral */
  c.dtype = c1->dtype;
  c.batch = c1->batch;
  c.heads = c1->heads;
  c.kv_heads = c1->heads;
  c.q_len = c1->q_len;
  c.kv_len = c1->kv_len;
  c.head_dim = c1->head_dim;
  c.value_dim = c1->value_dim;
  c.q.data = c1->q;
  dense_strides(c.q.stride, c1->heads, c1->q_len, c1->head_dim);
  c.k.data = c1->k;
  dense_strides(c.k.stride, c1->heads, c1->kv_len, c1->head_dim);
  c.v.data = c1->v;
  dense_strides(c.v.stride, c1->heads, c1->kv_len, c1->value_dim);
  c.out.data = c1->out;
  dense_strides(c.out.stride, c1->heads, c1->q_len, c1->value_dim);
  c.causal = c1->causal;
  c.window_left = -1;
  c.window_right = -1;
  c.scale = c1->scale;
  c.mask.data = c1->mask;
  if (c1->mask) dense_strides(c.mask.stride, c1->heads, c1->q_len, c1->kv_len);
  return example_forward_v2(&c, err, err_len);
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "example_c_v2", example_forward_v1};
  return &impl;
}
