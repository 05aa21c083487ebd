/* The v2 example plugin (plugins/example_c/example_attention_v2.c: correct for
 * every feature), declaring masks, causal rules and SOFTCAP, but answering
 * ATTNCHECK_UNSUPPORTED to every call with a soft-cap: a declared feature
 * refused on every call that uses it, which the pinned v2 contract
 * (include/attncheck/plugin_v2.h) makes a failure, not a skipped law. */
#include <stdio.h>

/* The example's own entry points get other names; this file exports its own. */
#define attncheck_plugin_v2 example_entry_v2
#define attncheck_plugin_v1 example_entry_v1
#include "../../plugins/example_c/example_attention_v2.c"
#undef attncheck_plugin_v2
#undef attncheck_plugin_v1

static int refuse_softcap_forward(const attncheck_call_v2 *c, char *err, size_t err_len) {
  if (c->softcap > 0) {
    snprintf(err, err_len, "soft-capping is not implemented yet");
    return ATTNCHECK_UNSUPPORTED;
  }
  return example_forward_v2(c, err, err_len);
}

const attncheck_impl_v2 *attncheck_plugin_v2(void) {
  static const attncheck_impl_v2 impl = {
      ATTNCHECK_ABI_VERSION_2,
      ATTNCHECK_FEATURE_MASK | ATTNCHECK_FEATURE_CAUSAL | ATTNCHECK_FEATURE_SOFTCAP,
      "refuse_softcap",
      refuse_softcap_forward,
      NULL};
  return &impl;
}
