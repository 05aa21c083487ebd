// `naive`: the founding C# layer (founding-case.md) made correct, one
// query row at a time with plain loops: preSoftMax over the keys, softmax,
// weighted sum of V rows. The three repairs are marked FIX.
#include <cmath>
#include <limits>
#include <vector>

#include "impls/kernels.h"
#include "impls/typed_call_v2.h"

namespace attncheck {
namespace {

// ABI v2, with the spec's rules spelled out here rather than taken from
// TypedCallV2's helpers (online uses those), so that the references check
// each other's reading of the spec too. Per existing row i of (b, h), with
// Lq, Lk the lengths and d_i the diagonal:
//   key j visible  iff j < Lk, causal: j <= d_i, window: d_i - left <= j <= d_i + right,
//                      mask != 0, bias != -inf
//   logit z_j      =   scale q.k, soft-capped, + bias, - slope * |d_i - j|
//   out_i          =   sum_j exp(z_j) v_j / (exp(sink) + sum_j exp(z_j))
template <class T>
void naive_attention(const TypedCallV2<T>& c) {
  const T scale = c.abi_scale();
  const T softcap = static_cast<T>(c.softcap);
  const T minus_inf = -std::numeric_limits<T>::infinity();
  std::vector<T> logit(c.kv_len);
  std::vector<char> sees(c.kv_len);
  for (int64_t b = 0; b < c.batch; ++b) {
    // Lq and Lk: the lengths given, else the slot's (packed: cu[b+1] - cu[b]).
    const int64_t q_len = c.q_lens ? c.q_lens[b] : c.cu_q ? c.cu_q[b + 1] - c.cu_q[b] : c.q_len;
    const int64_t kv_len = c.kv_lens ? c.kv_lens[b] : c.cu_k ? c.cu_k[b + 1] - c.cu_k[b] : c.kv_len;
    for (int64_t h = 0; h < c.heads; ++h) {
      const int64_t kv_head = h / (c.heads / c.kv_heads);        // GQA: a group of query heads per kv head
      const T sink = c.sinks ? static_cast<T>(c.sinks[h]) : minus_inf;
      for (int64_t i = 0; i < q_len; ++i) {                      // padding rows: never touched
        const int64_t diag = c.causal == ATTNCHECK_CAUSAL_TOP_LEFT ? i : i + kv_len - q_len;
        const T* q = c.q.row(b, h, i);   // [head_dim]
        T* output = c.out.row(b, h, i);  // [value_dim]

        // Attention logits of the visible keys; padding keys are never read.
        bool sees_any = false;
        for (int64_t j = 0; j < kv_len; ++j) {
          // FIX 2: the causal rule and the mask (and v2's window and bias) hide keys.
          bool ok = (c.causal == ATTNCHECK_CAUSAL_NONE || j <= diag) &&
                    (c.window_left < 0 || j >= diag - c.window_left) &&
                    (c.window_right < 0 || j <= diag + c.window_right) && (!c.mask || c.mask(b, h, i, j) != 0);
          const T bias = ok && c.bias ? c.bias(b, h, i, j) : T(0);
          ok = ok && bias != minus_inf;
          sees[j] = ok;
          if (!ok) continue;
          sees_any = true;
          const T* k = c.k.row(b, kv_head, j);  // [head_dim]
          T dot = 0;
          for (int64_t d = 0; d < c.head_dim; ++d) dot += q[d] * k[d];
          T z = scale * dot;  // FIX 1: scaled by 1/sqrt(head_dim)
          if (c.softcap > 0) z = softcap * std::tanh(z / softcap);
          if (c.bias) z += bias;
          if (c.alibi_slopes) z -= static_cast<T>(c.slope(b, h)) * static_cast<T>(diag > j ? diag - j : j - diag);
          logit[j] = z;
        }

        float* lse = c.lse ? c.lse + (b * c.heads + h) * c.q_len + i : nullptr;
        for (int64_t col = 0; col < c.value_dim; ++col) output[col] = 0;
        if (!sees_any) {  // out = 0; lse = the sink's logit alone (or -inf)
          if (lse) *lse = static_cast<float>(sink);
          continue;
        }

        // Softmax over the visible keys and the sink, the max subtracted first
        // so exp() cannot overflow.
        T max_logit = sink;
        for (int64_t j = 0; j < kv_len; ++j)
          if (sees[j] && logit[j] > max_logit) max_logit = logit[j];
        T sum = c.sinks ? std::exp(sink - max_logit) : T(0);  // the sink weighs in the denominator only
        for (int64_t j = 0; j < kv_len; ++j) {
          logit[j] = sees[j] ? std::exp(logit[j] - max_logit) : T(0);
          sum += logit[j];
        }
        // FIX 3: the output mixes V rows by the softmax weights (the founding
        // "fix" multiplied by Q instead).
        for (int64_t j = 0; j < kv_len; ++j) {
          if (!sees[j]) continue;
          const T* v = c.v.row(b, kv_head, j);  // [value_dim]
          const T weight = logit[j] / sum;
          for (int64_t col = 0; col < c.value_dim; ++col) output[col] += v[col] * weight;
        }
        if (lse) *lse = static_cast<float>(max_logit + std::log(sum));
      }
    }
  }
}

}  // namespace

int naive_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len) {
  return dispatch_v2(call, err, err_len, [](const auto& c) { naive_attention(c); });
}

int naive_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  return dispatch_v3(call, err, err_len, [](const auto& c) { naive_attention(c); });
}

int naive_forward(const attncheck_call* call, char* err, size_t err_len) {
  return forward_v1_via_v2(call, err, err_len, naive_forward_v2);
}

}  // namespace attncheck
