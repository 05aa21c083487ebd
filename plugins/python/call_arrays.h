// One ABI call (version 3's; its v2 part is version 2's call) as the arguments of the calling convention (docs/python.md,
// "The calling convention"):
//   fn(q, k, v, *, mask=None, causal="none", scale=None, **features)
//   q [batch, heads, q_len, head_dim], k [batch, kv_heads, kv_len, head_dim],
//   v [batch, kv_heads, kv_len, value_dim]: read-only NumPy views of the call's
//   memory with its strides (f32, f64; f16 as float16), or for bf16 float32
//   copies holding the bf16 values; mask a bool array [batch, heads, q_len,
//   kv_len] or None; causal "none" | "top_left" | "bottom_right"; scale a float
//   or None (NaN in the call: the default 1/sqrt(head_dim)).
// The features the function declares (attncheck_features) add keywords named
// after the ABI's fields, with the ABI's values (NULL pointers as None):
//   gqa      kv_heads (int)
//   lengths  q_lens, kv_lens (int32 [batch] or None)
//   window   window_left, window_right (int; -1 unbounded)
//   softcap  softcap (float; 0 none)
//   bias     bias ([batch, heads, q_len, kv_len] in the call's dtype, as q; or None)
//   alibi    alibi_slopes (float32 [heads] or None)
//   sinks    sinks (float32 [heads] or None)
// "lse" adds no keyword: the function returns (out, lse).
// Version 3 (the function declares "packed"):
//   packed   cu_seqlens_q, cu_seqlens_k (int32 [batch + 1] or None), total_q,
//            total_k (int; 0 when that side is not packed), q_len, kv_len (int:
//            the slots' bounds). With cu_seqlens_q, q arrives packed as
//            [total_q, heads, head_dim] (row cu_seqlens_q[b] + i is row i of
//            sequence b; slack and padding rows hold any bits); with
//            cu_seqlens_k, k and v as [total_k, kv_heads, head_dim | value_dim].
//
// The backward (fn.attncheck_backward) of the same call:
//   bwd(q, k, v, out, dout, *, mask=None, causal="none", scale=None, **features)
//   out, dout [batch, heads, q_len, value_dim]: read-only, as q (out is what the
//   function's forward returned, rounded to the call's dtype); the same keywords as
//   the forward, and with "lse" declared also lse (float32 [batch, heads, q_len], the
//   forward's, or None when the checker did not ask the forward for it).
#pragma once

#include <string>

#include "attncheck/plugin_v3.h"
#include "numpy_api.h"

namespace pybridge {

struct CallArguments {
  Ref args;    // (q, k, v)
  Ref kwargs;  // the keywords above
};

// Builds them; false (and a Python exception pending) when NumPy could not.
bool call_arguments(const attncheck_call_v3& c, unsigned features, CallArguments& out);

// (q, k, v, out, dout) and the keywords of the backward call; false as above.
bool backward_arguments(const attncheck_call_v3& c, const attncheck_grad& g, unsigned features,
                        CallArguments& out);

}  // namespace pybridge
