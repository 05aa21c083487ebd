/* grouped_query_runtime_plugin: a correct attention with the shape limits of an
 * inference runtime's grouped-query op (issue #33, item 5): it takes only
 * value_dim = head_dim, and only head dims that are a multiple of 8, and
 * answers ATTNCHECK_UNSUPPORTED to every other call, forward and backward.
 *
 * Inside those limits it is the shipped v2 example (plugins/example_c/
 * example_attention_v2.c, included below with its entry points renamed): every
 * feature of ABI version 2 and gradients, computed in double. So every law of
 * the default catalogue applies to it, and each must judge its floor of cases
 * through calls of the kernel's own shapes: a law that builds calls the kernel
 * refuses (V = identity with value_dim = kv_len, a head_dim changed by one) is
 * insufficient, which tests/shapes/every_law_judged.py fails.
 *
 * Tensors as in the example: q [batch][heads][q_len][head_dim],
 * k [batch][kv_heads][kv_len][head_dim], v [batch][kv_heads][kv_len][value_dim],
 * out [batch][heads][q_len][value_dim], through their strides. */
#include <stdio.h>

/* The example's entry points, renamed so that this file exports its own. */
#define attncheck_plugin_v2 example_attention_v2_entry
#define attncheck_plugin_v1 example_attention_v1_entry
#include "../../plugins/example_c/example_attention_v2.c"
#undef attncheck_plugin_v2
#undef attncheck_plugin_v1

/* 1 when the kernel takes this call's shape; else 0 with the reason in err. */
static int shape_taken(const attncheck_call_v2 *c, char *err, size_t err_len) {
  if (c->value_dim != c->head_dim) {
    snprintf(err, err_len, "value_dim (%lld) must equal head_dim (%lld)", (long long)c->value_dim,
             (long long)c->head_dim);
    return 0;
  }
  if (c->head_dim % 8 != 0) {
    snprintf(err, err_len, "head_dim (%lld) must be a multiple of 8", (long long)c->head_dim);
    return 0;
  }
  return 1;
}

static int runtime_forward(const attncheck_call_v2 *c, char *err, size_t err_len) {
  if (!shape_taken(c, err, err_len)) return ATTNCHECK_UNSUPPORTED;
  return example_forward_v2(c, err, err_len);
}

static int runtime_backward(const attncheck_call_v2 *c, const attncheck_grad *grad, char *err, size_t err_len) {
  if (!shape_taken(c, err, err_len)) return ATTNCHECK_UNSUPPORTED;
  return example_backward_v2(c, grad, err, err_len);
}

const attncheck_impl_v2 *attncheck_plugin_v2(void) {
  static const attncheck_impl_v2 impl = {ATTNCHECK_ABI_VERSION_2, EXAMPLE_V2_FEATURES, "grouped_query_runtime",
                                         runtime_forward, runtime_backward};
  return &impl;
}
