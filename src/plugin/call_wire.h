// An ABI v2 call as it travels from the parent to a plugin's host child: the
// scalars as they are, every pointer as its offset in the shared region plus
// one (0: NULL), so the child rebases it onto its own mapping. Plain data of
// fixed size, part of host::CallRequest (host_protocol.h).
//
// A backward call's gradient views (attncheck_grad) travel the same way.
//
// Example usage:
//   parent: req.v2 = to_wire(abi_call_v2(p, layout, region.data()), region.data());
//           req.grad = to_wire(abi_grad(p, layout, region.data()), region.data());
//   child:  const attncheck_call_v2 call = from_wire(req.v2, base);
//           const attncheck_grad grad = from_wire(req.grad, base);
#pragma once

#include <cstdint>

#include "attncheck/plugin_v2.h"

namespace attncheck::host {

struct WireView {
  uint64_t data = 0;  // offset + 1, or 0 for NULL
  int64_t stride[4] = {};
};

struct WireCallV2 {
  int32_t dtype = 0, causal = 0;
  int64_t batch = 0, heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0, value_dim = 0;
  WireView q, k, v, out, mask, bias;
  uint64_t lse = 0, q_lens = 0, kv_lens = 0, alibi_slopes = 0, sinks = 0;  // offset + 1, or 0
  int64_t window_left = -1, window_right = -1;
  double scale = 0, softcap = 0;
};

// attncheck_grad: dout (input), dq, dk, dv (outputs).
struct WireGrad {
  WireView dout, dq, dk, dv;
};

inline uint64_t wire_offset(const void* p, const uint8_t* base) {
  return p ? static_cast<uint64_t>(static_cast<const uint8_t*>(p) - base) + 1 : 0;
}

template <class T>
inline T* rebased(uint64_t offset, uint8_t* base) {
  return offset ? reinterpret_cast<T*>(base + (offset - 1)) : nullptr;
}

inline WireCallV2 to_wire(const attncheck_call_v2& c, const uint8_t* base) {
  WireCallV2 w;
  w.dtype = static_cast<int32_t>(c.dtype);
  w.causal = static_cast<int32_t>(c.causal);
  w.batch = c.batch;
  w.heads = c.heads;
  w.kv_heads = c.kv_heads;
  w.q_len = c.q_len;
  w.kv_len = c.kv_len;
  w.head_dim = c.head_dim;
  w.value_dim = c.value_dim;
  auto view = [base](WireView& dst, const void* data, const int64_t* stride) {
    dst.data = wire_offset(data, base);
    for (int a = 0; a < 4; ++a) dst.stride[a] = stride[a];
  };
  view(w.q, c.q.data, c.q.stride);
  view(w.k, c.k.data, c.k.stride);
  view(w.v, c.v.data, c.v.stride);
  view(w.out, c.out.data, c.out.stride);
  view(w.mask, c.mask.data, c.mask.stride);
  view(w.bias, c.bias.data, c.bias.stride);
  w.lse = wire_offset(c.lse, base);
  w.q_lens = wire_offset(c.q_lens, base);
  w.kv_lens = wire_offset(c.kv_lens, base);
  w.alibi_slopes = wire_offset(c.alibi_slopes, base);
  w.sinks = wire_offset(c.sinks, base);
  w.window_left = c.window_left;
  w.window_right = c.window_right;
  w.scale = c.scale;
  w.softcap = c.softcap;
  return w;
}

inline attncheck_call_v2 from_wire(const WireCallV2& w, uint8_t* base) {
  attncheck_call_v2 c{};
  c.dtype = static_cast<attncheck_dtype>(w.dtype);
  c.causal = static_cast<attncheck_causal>(w.causal);
  c.batch = w.batch;
  c.heads = w.heads;
  c.kv_heads = w.kv_heads;
  c.q_len = w.q_len;
  c.kv_len = w.kv_len;
  c.head_dim = w.head_dim;
  c.value_dim = w.value_dim;
  auto view = [base](attncheck_view& dst, const WireView& src) {
    dst.data = rebased<const uint8_t>(src.data, base);
    for (int a = 0; a < 4; ++a) dst.stride[a] = src.stride[a];
  };
  view(c.q, w.q);
  view(c.k, w.k);
  view(c.v, w.v);
  view(c.mask, w.mask);
  view(c.bias, w.bias);
  c.out.data = rebased<uint8_t>(w.out.data, base);
  for (int a = 0; a < 4; ++a) c.out.stride[a] = w.out.stride[a];
  c.lse = rebased<float>(w.lse, base);
  c.q_lens = rebased<const int32_t>(w.q_lens, base);
  c.kv_lens = rebased<const int32_t>(w.kv_lens, base);
  c.alibi_slopes = rebased<const float>(w.alibi_slopes, base);
  c.sinks = rebased<const float>(w.sinks, base);
  c.window_left = w.window_left;
  c.window_right = w.window_right;
  c.scale = w.scale;
  c.softcap = w.softcap;
  return c;
}

inline WireGrad to_wire(const attncheck_grad& g, const uint8_t* base) {
  WireGrad w;
  auto view = [base](WireView& dst, const void* data, const int64_t* stride) {
    dst.data = wire_offset(data, base);
    for (int a = 0; a < 4; ++a) dst.stride[a] = stride[a];
  };
  view(w.dout, g.dout.data, g.dout.stride);
  view(w.dq, g.dq.data, g.dq.stride);
  view(w.dk, g.dk.data, g.dk.stride);
  view(w.dv, g.dv.data, g.dv.stride);
  return w;
}

inline attncheck_grad from_wire(const WireGrad& w, uint8_t* base) {
  attncheck_grad g{};
  g.dout.data = rebased<const uint8_t>(w.dout.data, base);
  for (int a = 0; a < 4; ++a) g.dout.stride[a] = w.dout.stride[a];
  auto out = [base](attncheck_out_view& dst, const WireView& src) {
    dst.data = rebased<uint8_t>(src.data, base);
    for (int a = 0; a < 4; ++a) dst.stride[a] = src.stride[a];
  };
  out(g.dq, w.dq);
  out(g.dk, w.dk);
  out(g.dv, w.dv);
  return g;
}

}  // namespace attncheck::host
