/* A version-3 plugin that promises ATTNCHECK_PROMISE_DETERMINISTIC and breaks
 * it: the v3 example's kernel (plugins/example_c/example_attention_v3.c, in
 * double), handed on every other call the same keys and values in reverse
 * order (k and v viewed from their last key with a negative key stride). The
 * attention is the same (it declares no feature: no mask, causal rule, window
 * or ALiBi ties a key to its index), its sums run the other way, so f64
 * results differ in their last bits from call to call: a per-call counter
 * picks the order, as a kernel with a persistent work queue or split
 * scheduler would. For tests/plugins/v3_cli.py, scenario promises: the
 * rerun_bit_identical law fails it through the plugin host.
 * With NO_PROMISE it promises nothing (the law is then skipped). */
#define attncheck_plugin_v3 example_entry_v3
#include "../../plugins/example_c/example_attention_v3.c"
#undef attncheck_plugin_v3

#include "attncheck/plugin_v3.h"

static unsigned counter_calls;

/* view with its key axis (2) reversed over keys 0 .. kv_len-1 */
static attncheck_view reversed_keys(attncheck_view v, int64_t kv_len, size_t element) {
  v.data = (const char *)v.data + (size_t)((kv_len - 1) * v.stride[2]) * element;
  v.stride[2] = -v.stride[2];
  return v;
}

static int counter_order_forward(const attncheck_call_v3 *call, char *err, size_t err_len) {
  if (counter_calls++ % 2 == 0) return example_forward_v3(call, err, err_len);
  attncheck_call_v3 flipped = *call;
  const size_t element = call->v2.dtype == ATTNCHECK_F64 ? sizeof(double) : sizeof(float);
  if (call->v2.kv_len > 0) {
    flipped.v2.k = reversed_keys(call->v2.k, call->v2.kv_len, element);
    flipped.v2.v = reversed_keys(call->v2.v, call->v2.kv_len, element);
  }
  return example_forward_v3(&flipped, err, err_len);
}

#ifdef NO_PROMISE
#define COUNTER_PROMISES 0u
#else
#define COUNTER_PROMISES ATTNCHECK_PROMISE_DETERMINISTIC
#endif

const attncheck_impl_v3 *attncheck_plugin_v3(void) {
  static const attncheck_impl_v3 impl = {ATTNCHECK_ABI_VERSION_3, 0, 0, 0, COUNTER_PROMISES, "counter_order",
                                         counter_order_forward, NULL};
  return &impl;
}
