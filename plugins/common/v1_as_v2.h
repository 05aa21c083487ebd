// A v1 call as the dense v2 call it is: the same tensors with row-major
// strides, every v2 field neutral (one kv head per head, no lengths, no
// window, no soft-cap, bias, ALiBi or sinks). For the plugins that implement
// ABI v2 and export v1 through it (plugins/torch, plugins/python).
//
// Example usage:
//   int forward_v1(const attncheck_call* c1, char* err, size_t n) {
//     const attncheck_call_v2 c = attncheck_plugins::v1_as_v2(*c1);
//     return forward_v2(&c, err, n);
//   }
#pragma once

#include <cstdint>

#include "attncheck/plugin.h"
#include "attncheck/plugin_v2.h"

namespace attncheck_plugins {

// Row-major strides of a dense [d0][d1][d2][d3] tensor.
inline void dense_strides(int64_t (&stride)[4], int64_t d1, int64_t d2, int64_t d3) {
  stride[3] = 1;
  stride[2] = d3;
  stride[1] = d2 * d3;
  stride[0] = d1 * d2 * d3;
}

inline attncheck_call_v2 v1_as_v2(const attncheck_call& c1) {
  attncheck_call_v2 c{};
  c.dtype = c1.dtype;
  c.batch = c1.batch;
  c.heads = c.kv_heads = c1.heads;
  c.q_len = c1.q_len;
  c.kv_len = c1.kv_len;
  c.head_dim = c1.head_dim;
  c.value_dim = c1.value_dim;
  c.q.data = c1.q;
  dense_strides(c.q.stride, c1.heads, c1.q_len, c1.head_dim);
  c.k.data = c1.k;
  dense_strides(c.k.stride, c1.heads, c1.kv_len, c1.head_dim);
  c.v.data = c1.v;
  dense_strides(c.v.stride, c1.heads, c1.kv_len, c1.value_dim);
  c.out.data = c1.out;
  dense_strides(c.out.stride, c1.heads, c1.q_len, c1.value_dim);
  c.causal = c1.causal;
  c.window_left = c.window_right = -1;
  c.scale = c1.scale;
  c.mask.data = c1.mask;
  if (c1.mask) dense_strides(c.mask.stride, c1.heads, c1.q_len, c1.kv_len);
  return c;
}

}  // namespace attncheck_plugins
