// What the function returned, checked and written into the call's outputs:
//   out [batch, heads, q_len, value_dim] ([total_q, heads, value_dim] when q is
//       packed: cu_seqlens_q), any float dtype (NumPy or torch.Tensor),
//       rounded to the call's dtype as the rest of attncheck rounds (to float,
//       then to f16 / bf16 to nearest even: src/problem/dtype.cpp) and written
//       through out's strides, rows i < q_lens[b] of each slot only (padding
//       rows and packed slack are not the function's to write);
//   lse [batch, heads, q_len] with "lse" declared (the function returns (out, lse)),
//       into call->lse when the checker asks for it.
// and the backward's (dq, dk, dv) into the attncheck_grad's views (write_gradients).
#pragma once

#include <string>

#include "attncheck/plugin_v3.h"
#include "interpreter.h"

namespace pybridge {

// ATTNCHECK_OK, or 2 with `error` saying what was expected and what came back
// (a Python exception pending or not: the caller clears it).
int write_result(const Target& t, const attncheck_call_v3& c, PyObject* result, std::string& error);

// What the backward returned, (dq, dk, dv), checked the same way (shapes
// [batch, heads, q_len, head_dim], [batch, kv_heads, kv_len, head_dim],
// [batch, kv_heads, kv_len, value_dim], float dtypes), rounded to the call's dtype
// and written through the gradients' strides: dq rows i < q_lens[b], dk and dv
// keys j < kv_lens[b] only. ATTNCHECK_OK, or 2 with `error`.
int write_gradients(const Target& t, const attncheck_call_v2& c, const attncheck_grad& g, PyObject* result,
                    std::string& error);

}  // namespace pybridge
