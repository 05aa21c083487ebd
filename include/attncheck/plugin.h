#ifndef ATTNCHECK_PLUGIN_H
#define ATTNCHECK_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATTNCHECK_ABI_VERSION 1u

typedef enum attncheck_dtype {
  ATTNCHECK_F32 = 0,  /* float */
  ATTNCHECK_F64 = 1,  /* double */
  ATTNCHECK_F16 = 2,  /* IEEE binary16, stored as uint16_t */
  ATTNCHECK_BF16 = 3, /* bfloat16, stored as uint16_t */
} attncheck_dtype;

typedef enum attncheck_causal {
  ATTNCHECK_CAUSAL_NONE = 0,
  ATTNCHECK_CAUSAL_TOP_LEFT = 1,     /* query i may see key j iff j <= i */
  ATTNCHECK_CAUSAL_BOTTOM_RIGHT = 2, /* query i may see key j iff j <= i + kv_len - q_len */
} attncheck_causal;

/* One forward call. Every tensor is dense, contiguous and row-major:
 *   q    [batch][heads][q_len][head_dim]
 *   k    [batch][heads][kv_len][head_dim]
 *   v    [batch][heads][kv_len][value_dim]
 *   mask [batch][heads][q_len][kv_len], nonzero = may attend (optional)
 *   out  [batch][heads][q_len][value_dim]
 * A key is visible to a query iff both the causal rule and the mask allow it.
 * out = softmax(scale * q k^T over the visible keys) v; a query row that sees
 * no key at all gets an output row of zeros. */
typedef struct attncheck_call {
  attncheck_dtype dtype;
  int64_t batch, heads, q_len, kv_len, head_dim, value_dim;
  attncheck_causal causal;
  double scale;         /* NaN: use your default, which must be 1/sqrt(head_dim) */
  const void *q, *k, *v;
  const uint8_t *mask;  /* NULL: no mask */
  void *out;
} attncheck_call;

#define ATTNCHECK_OK 0          /* out is written */
#define ATTNCHECK_UNSUPPORTED 1 /* this dtype, shape or feature is not offered: skipped, not a failure */
/* Any other return value is an error and counts as a failure. */

typedef struct attncheck_impl {
  uint32_t abi_version; /* ATTNCHECK_ABI_VERSION */
  const char *name;
  int (*forward)(const attncheck_call *call, char *err, size_t err_len);
} attncheck_impl;

/* The one symbol a plugin exports. */
const attncheck_impl *attncheck_plugin_v1(void);

#ifdef __cplusplus
}
#endif

#endif
