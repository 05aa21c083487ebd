// ABI v2 softmax attention with knobs, each knob one of the zoo's v2 faults:
// what knobbed_attention.h is for v1. Every feature of the v2 spec (GQA,
// strides, lengths, windows, softcap, bias, ALiBi, sinks, lse, mask, causal)
// is one plain loop here, so a member that turns one knob differs from
// correct attention in exactly that feature. With the default KnobsV2 it is
// correct attention. Written from the spec, not from the references
// (reference, naive, online do not use it, and it uses none of
// TypedCallV2's visibility helpers), so that it is a second reading of the spec.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>
#include <vector>

#include "impls/typed_call_v2.h"

namespace attncheck::detail {

struct KnobsV2 {
  bool gqa_modulo = false;             // query head h reads kv head h % kv_heads, not h / (heads / kv_heads)
  bool strides_ignored = false;        // q, k, v read as dense BHSD whatever their strides (out keeps its own)
  bool padding_keys_attended = false;  // the key loop runs to kv_len, past kv_lens[b]
  bool window_off_by_one = false;      // window_left = W admits W keys on the left, not W + 1
  bool window_top_left = false;        // window and ALiBi align to d_i = i whatever the causal rule
  bool softcap_after_bias = false;     // tanh cap applied after the bias and ALiBi are added
  bool alibi_sign = false;             // + slope * |d_i - j| instead of -
  bool sinks_ignored = false;          // exp(sink) left out of the denominator (and the lse)
  bool lse_base2 = false;              // lse written as log2 of the sum
};

// Per existing row i of (b, h), Lq and Lk the lengths of batch b:
//   causal diagonal  c_i = i (TOP_LEFT) or i + Lk - Lq (BOTTOM_RIGHT)
//   window diagonal  d_i = the same rule (NONE aligns like BOTTOM_RIGHT)
//   key j visible    j < Lk, causal: j <= c_i, d_i - left <= j <= d_i + right, mask, bias != -inf
//   logit z_j        cap tanh(scale q.k / cap) + bias - slope |d_i - j|
//   out_i            sum_j exp(z_j) v_j / (exp(sink) + sum_j exp(z_j)), lse_i = log of the denominator
// Arithmetic in T; lse rounded to float. Padding rows of out and lse are never written.
template <class T>
void knobbed_attention_v2(const TypedCallV2<T>& c, const KnobsV2& knobs) {
  const T minus_inf = -std::numeric_limits<T>::infinity();
  const T scale = c.abi_scale();
  const T cap = static_cast<T>(c.softcap);
  std::vector<T> z(c.kv_len);       // [kv_len] logits, then exp weights
  std::vector<char> seen(c.kv_len); // [kv_len] visible keys
  for (int64_t b = 0; b < c.batch; ++b) {
    const int64_t rows = c.q_lens ? c.q_lens[b] : c.q_len;
    const int64_t keys = c.kv_lens ? c.kv_lens[b] : c.kv_len;
    const int64_t key_loop = knobs.padding_keys_attended ? c.kv_len : keys;
    for (int64_t h = 0; h < c.heads; ++h) {
      const int64_t group = c.heads / c.kv_heads;
      const int64_t kvh = knobs.gqa_modulo ? h % c.kv_heads : h / group;
      const T sink = c.sinks && !knobs.sinks_ignored ? static_cast<T>(c.sinks[h]) : minus_inf;
      const T slope = c.alibi_slopes ? static_cast<T>(c.alibi_slopes[h]) : T(0);
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t causal_diag = c.causal == ATTNCHECK_CAUSAL_TOP_LEFT ? i : i + keys - rows;
        const int64_t diag = knobs.window_top_left ? i : causal_diag;
        const int64_t left_reach = knobs.window_off_by_one ? c.window_left - 1 : c.window_left;
        const T* q = c.q.row(b, h, i);   // [head_dim]
        T* out = c.out.row(b, h, i);     // [value_dim]

        T top = sink;  // running max of the logits and the sink
        bool any = false;
        for (int64_t j = 0; j < key_loop; ++j) {
          bool ok = c.causal == ATTNCHECK_CAUSAL_NONE || j <= causal_diag;
          ok = ok && (c.window_left < 0 || j >= diag - left_reach);
          ok = ok && (c.window_right < 0 || j <= diag + c.window_right);
          ok = ok && (!c.mask || c.mask(b, h, i, j) != 0);
          const T bias = ok && c.bias ? c.bias(b, h, i, j) : T(0);
          ok = ok && bias != minus_inf;
          seen[j] = ok;
          if (!ok) continue;
          any = true;
          const T* k = c.k.row(b, kvh, j);  // [head_dim]
          T dot = 0;
          for (int64_t d = 0; d < c.head_dim; ++d) dot += q[d] * k[d];
          T logit = scale * dot;
          const T distance = static_cast<T>(diag > j ? diag - j : j - diag);
          const T alibi = (knobs.alibi_sign ? slope : -slope) * distance;
          if (c.softcap > 0 && !knobs.softcap_after_bias) logit = cap * std::tanh(logit / cap);
          logit += bias + alibi;
          if (c.softcap > 0 && knobs.softcap_after_bias) logit = cap * std::tanh(logit / cap);
          z[j] = logit;
          if (logit > top) top = logit;
        }

        for (int64_t col = 0; col < c.value_dim; ++col) out[col] = 0;
        T lse = sink;  // a row that sees no key: out 0, lse the sink's logit (or -inf)
        if (any) {
          T sum = sink == minus_inf ? T(0) : std::exp(sink - top);
          for (int64_t j = 0; j < key_loop; ++j) {
            z[j] = seen[j] ? std::exp(z[j] - top) : T(0);
            sum += z[j];
          }
          for (int64_t j = 0; j < key_loop; ++j) {
            if (!seen[j]) continue;
            const T* v = c.v.row(b, kvh, j);  // [value_dim]
            for (int64_t col = 0; col < c.value_dim; ++col) out[col] += (z[j] / sum) * v[col];
          }
          lse = top + std::log(sum);
        }
        if (knobs.lse_base2) lse /= std::numbers::ln2_v<T>;
        if (float* row_lse = c.lse_row(b, h)) row_lse[i] = static_cast<float>(lse);
      }
    }
  }
}

// The whole v2 forward function of a knobbed zoo member. strides_ignored is
// applied to the call itself, before any widening of f16/bf16 (which reads
// through the strides), so that the fault is the same in every dtype: dense
// BHSD strides over q, k and v read inside their allocations (a view's
// allocation holds at least its elements from its first one), hitting gaps
// and other rows' elements instead of the right ones.
inline int knobbed_forward_v2(const attncheck_call_v2* call, char* err, std::size_t err_len, const KnobsV2& knobs) {
  attncheck_call_v2 sent = call ? *call : attncheck_call_v2{};
  if (call && knobs.strides_ignored) {
    const auto dense = [&](int64_t heads, int64_t rows, int64_t cols, int64_t (&stride)[4]) {
      stride[0] = heads * rows * cols, stride[1] = rows * cols, stride[2] = cols, stride[3] = 1;
    };
    dense(sent.heads, sent.q_len, sent.head_dim, sent.q.stride);
    dense(sent.kv_heads, sent.kv_len, sent.head_dim, sent.k.stride);
    dense(sent.kv_heads, sent.kv_len, sent.value_dim, sent.v.stride);
  }
  return dispatch_v2(call ? &sent : nullptr, err, err_len,
                     [&knobs](const auto& c) { knobbed_attention_v2(c, knobs); });
}

}  // namespace attncheck::detail
