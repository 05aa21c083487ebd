/* One kernel exported through version 2 (built plain) or through version 3
 * (built with EXPORT_AS_V3), for v3_same_verdicts.py: a version-3 plugin that
 * declares version-2 features only must get exactly the verdicts of the same
 * kernel exported as version 2. The kernel is the v2 example
 * (plugins/example_c/example_attention_v2.c: every feature, gradients) with one
 * fault, so that some laws fail and others pass: with a bias, every output is
 * 1 + 2^-6 times too large. The v3 export declares the same features, no v3
 * bit, and hands &call->v2 to the same functions: the call's added fields are
 * neutral (docs/abi/plugin-abi-v3.md: then `v2` alone is a version-2 call).
 * With CORRECT_DECLARES_V3 (and EXPORT_AS_V3) the kernel is the example's own,
 * without the fault, and the v3 export also declares what no law judges yet
 * (KV_PRECISION; Q_AS_Q8_0 is judged since the bound widens by it), KV_FORMATS with Q8_0 and Q4_0 (judged by
 * quantized_matches_oracle, which this version-2 kernel fails: it reads the
 * blocks as floats) and two promises the promise laws judge (DETERMINISTIC,
 * BATCH_INVARIANT): it passes every other law, and the reports must say that
 * none of the unjudged declarations was checked. */
#include <stdio.h>

/* The example's own entry points get other names; this file exports its own. */
#define attncheck_plugin_v2 example_entry_v2
#define attncheck_plugin_v1 example_entry_v1
#include "../../plugins/example_c/example_attention_v2.c"
#undef attncheck_plugin_v2
#undef attncheck_plugin_v1

#include "attncheck/plugin_v3.h"

/* out[b][h][i][c] *= 1 + 2^-6 for the live rows (f32 and f64 only: the test's dtypes). */
static void scale_out(const attncheck_call_v2 *c) {
  for (int64_t b = 0; b < c->batch; ++b) {
    const int64_t lq = c->q_lens ? c->q_lens[b] : c->q_len;
    for (int64_t h = 0; h < c->heads; ++h)
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t x = 0; x < c->value_dim; ++x) {
          const int64_t at = offset_of(c->out.stride, b, h, i, x);
          if (c->dtype == ATTNCHECK_F64) ((double *)c->out.data)[at] *= 1.0 + 1.0 / 64;
          else if (c->dtype == ATTNCHECK_F32) ((float *)c->out.data)[at] *= 1.0f + 1.0f / 64;
        }
  }
}

static int bias_scaled_forward_v2(const attncheck_call_v2 *c, char *err, size_t err_len) {
  const int rc = example_forward_v2(c, err, err_len);
#ifndef CORRECT_DECLARES_V3
  if (rc == ATTNCHECK_OK && c->bias.data) scale_out(c);
#else
  (void)scale_out;
#endif
  return rc;
}

#ifndef EXPORT_AS_V3
const attncheck_impl_v2 *attncheck_plugin_v2(void) {
  static const attncheck_impl_v2 impl = {ATTNCHECK_ABI_VERSION_2, EXAMPLE_V2_FEATURES, "bias_scaled",
                                         bias_scaled_forward_v2, example_backward_v2};
  return &impl;
}
#else
static int bias_scaled_forward_v3(const attncheck_call_v3 *c, char *err, size_t err_len) {
  return bias_scaled_forward_v2(&c->v2, err, err_len);
}

static int backward_v3(const attncheck_call_v3 *c, const attncheck_grad *g, char *err, size_t err_len) {
  return example_backward_v2(&c->v2, g, err, err_len);
}

#ifndef CORRECT_DECLARES_V3
const attncheck_impl_v3 *attncheck_plugin_v3(void) {
  static const attncheck_impl_v3 impl = {ATTNCHECK_ABI_VERSION_3, EXAMPLE_V2_FEATURES, 0, 0, 0, "bias_scaled",
                                         bias_scaled_forward_v3, backward_v3};
  return &impl;
}
#else
const attncheck_impl_v3 *attncheck_plugin_v3(void) {
  static const attncheck_impl_v3 impl = {
      ATTNCHECK_ABI_VERSION_3,
      EXAMPLE_V2_FEATURES | ATTNCHECK_FEATURE_KV_FORMATS,
      (1u << ATTNCHECK_KV_Q8_0) | (1u << ATTNCHECK_KV_Q4_0),
      ATTNCHECK_NUMERICS_Q_AS_Q8_0 | ATTNCHECK_NUMERICS_KV_PRECISION,
      ATTNCHECK_PROMISE_DETERMINISTIC | ATTNCHECK_PROMISE_BATCH_INVARIANT,
      "declares_v3",
      bias_scaled_forward_v3,
      backward_v3};
  return &impl;
}
#endif
#endif
