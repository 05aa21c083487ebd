/* example_attention_v2: a correct attncheck plugin for ABI version 2, in plain C99.
 *
 * Copy this file to start a plugin that takes what kernels take today. It declares
 * every feature of the pinned ABI (attncheck/plugin_v2.h, docs/abi/plugin-abi-v2.md) and
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
 * Its backward computes the gradients of sum(out * dout) with respect to q, k and v
 * with every one of those features (the part "backward" below derives each step). It
 * also exports attncheck_plugin_v1, a thin translation of a v1 call into a dense v2
 * call, so that a checker that only knows version 1 can load it too; a version-2
 * checker uses attncheck_plugin_v2.
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

/* Row i of query head h in batch b, whose batch has Lq = lq rows and Lk = lk keys. */
static row row_at(const attncheck_call_v2 *c, int64_t b, int64_t h, int64_t i, int64_t lq, int64_t lk) {
  row r;
  r.b = b;
  r.h = h;
  r.i = i;
  r.kv_h = h / (c->heads / c->kv_heads);
  r.kv_len = lk;
  /* TOP_LEFT aligns to the first key; BOTTOM_RIGHT and NONE to the last, so that
   * windows and ALiBi of a non-causal call sit where FlashAttention puts them. */
  r.diagonal = c->causal == ATTNCHECK_CAUSAL_TOP_LEFT ? i : i + lk - lq;
  return r;
}

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

/* The part of key j's logit that depends on q and k: the scaled dot product, then the
 * soft-cap. (backward needs it apart from the rest: the soft-cap's derivative is
 * 1 - (capped / softcap)^2.) */
static double cap(const attncheck_call_v2 *c, double dot, double scale) {
  double z = scale * dot;
  if (c->softcap > 0) z = c->softcap * tanh(z / c->softcap);
  return z;
}

static double capped_score(const attncheck_call_v2 *c, const row *r, int64_t j, double scale) {
  double dot = 0;
  for (int64_t d = 0; d < c->head_dim; ++d)
    dot += load(c->q.data, c->dtype, offset_of(c->q.stride, r->b, r->h, r->i, d)) *
           load(c->k.data, c->dtype, offset_of(c->k.stride, r->b, r->kv_h, j, d));
  return cap(c, dot, scale);
}

/* The logit z of visible key j from its capped score: plus the bias, then ALiBi. */
static double logit_of_capped(const attncheck_call_v2 *c, const row *r, int64_t j, double capped) {
  double z = capped;
  if (c->bias.data) z += load(c->bias.data, c->dtype, offset_of(c->bias.stride, r->b, r->h, r->i, j));
  if (c->alibi_slopes) z -= (double)c->alibi_slopes[r->h] * fabs((double)(r->diagonal - j));
  return z;
}

/* The logit z of visible key j: scaled dot product, then soft-cap, then bias, then
 * ALiBi, in this order (the spec's). */
static double logit(const attncheck_call_v2 *c, const row *r, int64_t j, double scale) {
  return logit_of_capped(c, r, j, capped_score(c, r, j, scale));
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
        const row r = row_at(c, b, h, i, lq, lk);
        attend_row(c, &r, scale, &w);
      }
    }
  }
  free(w.keys);
  free(w.weight);
  return ATTNCHECK_OK;
}

/* ---- backward: the gradients of sum(out * dout) ---------------------------------------
 *
 * The checker calls backward after forward, on the same call: q, k, v, mask, bias, ...
 * as forward saw them, and call->out (and call->lse, when LSE is declared and asked)
 * holding what this plugin's forward wrote. In a backward call out and lse are INPUTS:
 * writing them is out of bounds. The attncheck_grad adds
 *   dout [batch][heads][q_len][value_dim]    input, out's shape
 *   dq   [batch][heads][q_len][head_dim]     output, q's shape
 *   dk   [batch][kv_heads][kv_len][head_dim] output, k's shape
 *   dv   [batch][kv_heads][kv_len][value_dim] output, v's shape
 * each a view with its own strides, in the call's dtype. Gradients are overwritten,
 * never accumulated into what the buffers held. Padding rows of dq and padding keys of
 * dk and dv (and every gap of the views) are left as they are, and padding rows of q and
 * dout and padding keys of k and v are never read (they may hold NaN); dq of a row that
 * sees no key is 0, and dk, dv of a key that no row sees are 0.
 *
 * The arithmetic, for one row i (of query head h, batch b) with visible keys S, its
 * weights p_j (as forward computes them) and its dout row dO_i:
 *
 *   out_i = sum_{j in S} p_j v_j
 *   dV_j += p_j dO_i                      summed over every row that sees key j
 *   dP_j  = dO_i . v_j                    the gradient with respect to p_j
 *   D_i   = sum_{j in S} p_j dP_j         = dO_i . out_i: FlashAttention-2's
 *                                           "rowsum(dO * O)"
 *   dS_j  = p_j (dP_j - D_i)              the gradient with respect to the logit z_j:
 *                                           softmax's Jacobian diag(p) - p p^T applied to
 *                                           dP. Leaving out "- D_i" is the classic bug: the
 *                                           weights sum to one, so a change of one logit
 *                                           takes weight from every other key.
 *
 * A sink is one more term exp(s) in the denominator with no value: it only makes the
 * p_j smaller (they then sum to less than one), which the formulas above already carry;
 * it has no gradient of its own (the ABI asks none for sinks, bias, slopes, scale).
 *
 * The logit is z_j = cap(t_j) + bias + ALiBi with t_j = scale q_i . k_j and
 * cap(t) = softcap tanh(t / softcap). Bias and ALiBi do not depend on q or k, so
 *   dT_j  = dS_j cap'(t_j),  cap'(t) = 1 - tanh^2(t / softcap) = 1 - (cap(t) / softcap)^2
 *           (cap' = 1 without a soft-cap: forgetting it is the soft-cap's classic bug)
 *   dQ_i  = scale sum_{j in S} dT_j k_j
 *   dK_j += scale dT_j q_i                summed over every row that sees key j
 *
 * Grouped-query heads: query heads h = g*group .. g*group + group - 1 all read kv head g,
 * so dK and dV of kv head g sum over the rows of every one of those query heads (taking
 * one head's share, or the last one written, is GQA's classic bug). Below, one kv head's
 * dK and dV are accumulated in double over its whole group, then stored once.
 *
 * A row that sees no key has out = 0, a constant: dq = 0, and it adds nothing to dk, dv.
 * (A softmax of -inf logits gives 0/0 = NaN weights; computed that way the NaN would
 * reach dq of the row and, through dV and dK, every key of the head.)
 *
 * Precision. As in forward: every element is widened to double, all of the above is done
 * in double, and each gradient element is rounded once when stored. D_i is computed from
 * the weights in double rather than from call->out: a kernel that keeps no P takes
 * D = rowsum(dO * O) with O = call->out and recomputes p_j = exp(z_j - lse_i) from
 * call->lse, which is allowed, but for 16-bit dtypes the rounding of out would then enter
 * dP - D, where it does not cancel. Here the weights are recomputed from q and k as in
 * forward (max subtracted), so backward needs neither out nor lse. */

/* Scratch for backward, sized once per call. Every row of a kv head's group reads the
 * same K and V, so they are widened to double once per (batch, kv head) (k, v below),
 * as a FlashAttention kernel keeps a K/V tile on chip for all the rows it serves. */
typedef struct grad_scratch {
  double *k;     /* [kv_len][head_dim] K of one (batch, kv head), widened */
  double *v;     /* [kv_len][value_dim] V of one (batch, kv head), widened */
  int64_t *keys; /* [kv_len] the visible keys S of a row, in order */
  double *p;     /* [kv_len] their weights p_j */
  double *slope; /* [kv_len] cap'(t_j): 1 without a soft-cap */
  double *dp;    /* [kv_len] dP_j, then dT_j */
  double *dout;  /* [value_dim] the row's dO_i */
  double *q;     /* [head_dim] the row's q_i */
  double *dq;    /* [head_dim] the row's dQ_i */
  double *dk;    /* [kv_len][head_dim] dK of one (batch, kv head), summed over its group */
  double *dv;    /* [kv_len][value_dim] dV of one (batch, kv head), summed over its group */
} grad_scratch;

static void free_grad_scratch(grad_scratch *g) {
  free(g->k);
  free(g->v);
  free(g->keys);
  free(g->p);
  free(g->slope);
  free(g->dp);
  free(g->dout);
  free(g->q);
  free(g->dq);
  free(g->dk);
  free(g->dv);
}

/* Returns 0 when any allocation failed (everything allocated is then freed). */
static int alloc_grad_scratch(grad_scratch *g, const attncheck_call_v2 *c) {
  const size_t keys = (size_t)(c->kv_len > 0 ? c->kv_len : 1);
  const size_t hd = (size_t)(c->head_dim > 0 ? c->head_dim : 1), vd = (size_t)(c->value_dim > 0 ? c->value_dim : 1);
  g->k = (double *)malloc(keys * hd * sizeof(double));
  g->v = (double *)malloc(keys * vd * sizeof(double));
  g->keys = (int64_t *)malloc(keys * sizeof(int64_t));
  g->p = (double *)malloc(keys * sizeof(double));
  g->slope = (double *)malloc(keys * sizeof(double));
  g->dp = (double *)malloc(keys * sizeof(double));
  g->dout = (double *)malloc(vd * sizeof(double));
  g->q = (double *)malloc(hd * sizeof(double));
  g->dq = (double *)malloc(hd * sizeof(double));
  g->dk = (double *)malloc(keys * hd * sizeof(double));
  g->dv = (double *)malloc(keys * vd * sizeof(double));
  if (g->k && g->v && g->keys && g->p && g->slope && g->dp && g->dout && g->q && g->dq && g->dk && g->dv) return 1;
  free_grad_scratch(g);
  return 0;
}

/* The visible keys of row r, their weights p_j (the sink in the denominator) and the
 * soft-cap's derivative at each; returns |S|, the number of visible keys. The same
 * arithmetic as attend_row's steps 1 and 3, on the row's q (g->q) and the widened K
 * (the same products in the same order: the same logits, bit for bit). */
static int64_t row_weights(const attncheck_call_v2 *c, const row *r, double scale, grad_scratch *g) {
  const double sink = c->sinks ? (double)c->sinks[r->h] : -INFINITY;
  int64_t n = 0;
  double max = sink;
  for (int64_t j = 0; j < r->kv_len; ++j) {
    if (!visible(c, r, j)) continue;
    double dot = 0;
    for (int64_t d = 0; d < c->head_dim; ++d) dot += g->q[d] * g->k[j * c->head_dim + d];
    const double capped = cap(c, dot, scale);
    const double z = logit_of_capped(c, r, j, capped);
    g->keys[n] = j;
    g->p[n] = z;
    g->slope[n] = c->softcap > 0 ? 1 - (capped / c->softcap) * (capped / c->softcap) : 1;
    if (z > max) max = z;
    ++n;
  }
  if (n == 0) return 0;
  double sum = exp(sink - max);
  for (int64_t t = 0; t < n; ++t) {
    g->p[t] = exp(g->p[t] - max);
    sum += g->p[t];
  }
  for (int64_t t = 0; t < n; ++t) g->p[t] /= sum;
  return n;
}

/* One row's share: stores dQ_i, and adds the row's terms to the group's dK and dV
 * accumulators (g->dk, g->dv, indexed by key). */
static void backward_row(const attncheck_call_v2 *c, const attncheck_grad *grad, const row *r, double scale,
                         grad_scratch *g) {
  for (int64_t d = 0; d < c->head_dim; ++d)
    g->q[d] = load(c->q.data, c->dtype, offset_of(c->q.stride, r->b, r->h, r->i, d));
  const int64_t n = row_weights(c, r, scale, g);
  /* dQ of a row that sees no key is 0; it adds nothing to dK and dV. */
  for (int64_t d = 0; d < c->head_dim; ++d) g->dq[d] = 0;
  if (n > 0) {
    for (int64_t col = 0; col < c->value_dim; ++col)
      g->dout[col] = load(grad->dout.data, c->dtype, offset_of(grad->dout.stride, r->b, r->h, r->i, col));

    /* dV_j += p_j dO_i; dP_j = dO_i . v_j; D_i = sum_j p_j dP_j. */
    double rowsum = 0;
    for (int64_t t = 0; t < n; ++t) {
      const int64_t j = g->keys[t];
      double dp = 0;
      for (int64_t col = 0; col < c->value_dim; ++col) {
        dp += g->dout[col] * g->v[j * c->value_dim + col];
        g->dv[j * c->value_dim + col] += g->p[t] * g->dout[col];
      }
      g->dp[t] = dp;
      rowsum += g->p[t] * dp;
    }

    /* dT_j = p_j (dP_j - D_i) cap'(t_j); dQ_i = scale sum_j dT_j k_j; dK_j += scale dT_j q_i. */
    for (int64_t t = 0; t < n; ++t) {
      const int64_t j = g->keys[t];
      const double dt = g->p[t] * (g->dp[t] - rowsum) * g->slope[t];
      for (int64_t d = 0; d < c->head_dim; ++d) {
        g->dq[d] += scale * dt * g->k[j * c->head_dim + d];
        g->dk[j * c->head_dim + d] += scale * dt * g->q[d];
      }
    }
  }
  for (int64_t d = 0; d < c->head_dim; ++d)
    store(grad->dq.data, c->dtype, offset_of(grad->dq.stride, r->b, r->h, r->i, d), g->dq[d]);
}

static int example_backward_v2(const attncheck_call_v2 *c, const attncheck_grad *grad, char *err, size_t err_len) {
  if (c->dtype != ATTNCHECK_F32 && c->dtype != ATTNCHECK_F64 && c->dtype != ATTNCHECK_F16 &&
      c->dtype != ATTNCHECK_BF16) {
    snprintf(err, err_len, "unknown dtype %d", (int)c->dtype);
    return ATTNCHECK_UNSUPPORTED;
  }
  if (!call_is_valid(c, err, err_len)) return 2;
  const double scale = isnan(c->scale) ? 1.0 / sqrt((double)c->head_dim) : c->scale;
  const int64_t group = c->heads / c->kv_heads;

  grad_scratch g;
  if (!alloc_grad_scratch(&g, c)) {
    snprintf(err, err_len, "out of memory for the gradients' scratch (%lld keys)", (long long)c->kv_len);
    return 2;
  }

  for (int64_t b = 0; b < c->batch; ++b) {
    const int64_t lq = length_of(c->q_lens, b, c->q_len), lk = length_of(c->kv_lens, b, c->kv_len);
    for (int64_t kv_h = 0; kv_h < c->kv_heads; ++kv_h) {
      /* Its K and V, widened once for every row of the group; padding keys j >= Lk are
       * not read. */
      for (int64_t j = 0; j < lk; ++j) {
        for (int64_t d = 0; d < c->head_dim; ++d)
          g.k[j * c->head_dim + d] = load(c->k.data, c->dtype, offset_of(c->k.stride, b, kv_h, j, d));
        for (int64_t col = 0; col < c->value_dim; ++col)
          g.v[j * c->value_dim + col] = load(c->v.data, c->dtype, offset_of(c->v.stride, b, kv_h, j, col));
      }
      /* dK, dV of kv head kv_h start at 0: a key that no row sees keeps 0. */
      for (int64_t at = 0; at < lk * c->head_dim; ++at) g.dk[at] = 0;
      for (int64_t at = 0; at < lk * c->value_dim; ++at) g.dv[at] = 0;
      /* Every query head of the group, every existing row: padding rows i >= Lq are
       * neither read (q, dout) nor written (dq). */
      for (int64_t h = kv_h * group; h < (kv_h + 1) * group; ++h)
        for (int64_t i = 0; i < lq; ++i) {
          const row r = row_at(c, b, h, i, lq, lk);
          backward_row(c, grad, &r, scale, &g);
        }
      /* Stored once, overwriting; padding keys j >= Lk are left as they are. */
      for (int64_t j = 0; j < lk; ++j) {
        for (int64_t d = 0; d < c->head_dim; ++d)
          store(grad->dk.data, c->dtype, offset_of(grad->dk.stride, b, kv_h, j, d), g.dk[j * c->head_dim + d]);
        for (int64_t col = 0; col < c->value_dim; ++col)
          store(grad->dv.data, c->dtype, offset_of(grad->dv.stride, b, kv_h, j, col), g.dv[j * c->value_dim + col]);
      }
    }
  }
  free_grad_scratch(&g);
  return ATTNCHECK_OK;
}

/* Every feature version 2 defines, and gradients. (attncheck's tests build it again with
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
      example_backward_v2 /* NULL for a plugin without gradients */
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
