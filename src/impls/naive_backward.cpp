// `naive`'s backward: plain loops, one query row at a time, with the spec's
// rules spelled out here as naive.cpp spells them for forward (not taken from
// TypedCallV2's helpers, which reference and online use), so that the
// references check each other's reading of the spec. Per existing row i of
// (b, h), with its softmax weights p_j recomputed from scratch (call->lse is
// not used) and D_i = dO_i . O_i from the forward's own out (call->out):
//   dP_j = dO_i . v_j
//   dS_j = p_j (dP_j - D_i) (1 - tanh^2(s_j / softcap)),  s_j = scale q_i . k_j
//   dq_i = scale sum_j dS_j k_j
//   dk_j += scale dS_j q_i,  dv_j += p_j dO_i   (over every row and query head of the kv head's group)
#include <cmath>
#include <limits>
#include <vector>

#include "impls/kernels.h"
#include "impls/typed_grad_v2.h"

namespace attncheck {
namespace {

template <class T>
void naive_gradients(const TypedCallV2<T>& c, const TypedGradV2<T>& g) {
  const T scale = c.abi_scale();
  const T softcap = static_cast<T>(c.softcap);
  const T minus_inf = -std::numeric_limits<T>::infinity();
  const int64_t group = c.heads / c.kv_heads;
  std::vector<T> p(c.kv_len), slope(c.kv_len);  // [kv_len] weights and soft-cap slopes of one row
  std::vector<char> sees(c.kv_len);
  for (int64_t b = 0; b < c.batch; ++b) {
    const int64_t q_len = c.q_lens ? c.q_lens[b] : c.q_len;      // Lq
    const int64_t kv_len = c.kv_lens ? c.kv_lens[b] : c.kv_len;  // Lk
    // Overwrite, not accumulate: every live key of every kv head starts at 0.
    for (int64_t kvh = 0; kvh < c.kv_heads; ++kvh)
      for (int64_t j = 0; j < kv_len; ++j) {
        T* dk = g.dk.row(b, kvh, j);
        T* dv = g.dv.row(b, kvh, j);
        for (int64_t d = 0; d < c.head_dim; ++d) dk[d] = 0;
        for (int64_t col = 0; col < c.value_dim; ++col) dv[col] = 0;
      }
    for (int64_t h = 0; h < c.heads; ++h) {
      const int64_t kvh = h / group;
      const T sink = c.sinks ? static_cast<T>(c.sinks[h]) : minus_inf;
      for (int64_t i = 0; i < q_len; ++i) {
        const int64_t diag = c.causal == ATTNCHECK_CAUSAL_TOP_LEFT ? i : i + kv_len - q_len;
        const T* q = c.q.row(b, h, i);        // [head_dim]
        const T* dout = g.dout.row(b, h, i);  // [value_dim]
        const T* out = c.out.row(b, h, i);    // [value_dim], the forward's own output
        T* dq = g.dq.row(b, h, i);            // [head_dim]
        for (int64_t d = 0; d < c.head_dim; ++d) dq[d] = 0;

        // The row's logits, exactly as naive's forward computes them.
        bool sees_any = false;
        T max_logit = sink;
        for (int64_t j = 0; j < kv_len; ++j) {
          bool ok = (c.causal == ATTNCHECK_CAUSAL_NONE || j <= diag) &&
                    (c.window_left < 0 || j >= diag - c.window_left) &&
                    (c.window_right < 0 || j <= diag + c.window_right) && (!c.mask || c.mask(b, h, i, j) != 0);
          const T bias = ok && c.bias ? c.bias(b, h, i, j) : T(0);
          ok = ok && bias != minus_inf;
          sees[j] = ok;
          if (!ok) continue;
          sees_any = true;
          const T* k = c.k.row(b, kvh, j);
          T dot = 0;
          for (int64_t d = 0; d < c.head_dim; ++d) dot += q[d] * k[d];
          T z = scale * dot;
          slope[j] = 1;
          if (c.softcap > 0) {
            const T t = std::tanh(z / softcap);
            z = softcap * t;
            slope[j] = 1 - t * t;
          }
          if (c.bias) z += bias;
          if (c.alibi_slopes) z -= static_cast<T>(c.slope(b, h)) * static_cast<T>(diag > j ? diag - j : j - diag);
          p[j] = z;
          if (z > max_logit) max_logit = z;
        }
        if (!sees_any) continue;  // dq = 0, and nothing flows to any key

        T sum = c.sinks ? std::exp(sink - max_logit) : T(0);
        for (int64_t j = 0; j < kv_len; ++j) {
          p[j] = sees[j] ? std::exp(p[j] - max_logit) : T(0);
          sum += p[j];
        }
        T rowsum = 0;  // D_i = dO_i . O_i
        for (int64_t col = 0; col < c.value_dim; ++col) rowsum += dout[col] * out[col];

        for (int64_t j = 0; j < kv_len; ++j) {
          if (!sees[j]) continue;
          const T weight = p[j] / sum;
          const T* k = c.k.row(b, kvh, j);
          const T* v = c.v.row(b, kvh, j);
          T* dk = g.dk.row(b, kvh, j);
          T* dv = g.dv.row(b, kvh, j);
          T dp = 0;
          for (int64_t col = 0; col < c.value_dim; ++col) dp += dout[col] * v[col];
          const T ds = weight * (dp - rowsum) * slope[j];
          for (int64_t d = 0; d < c.head_dim; ++d) {
            dq[d] += scale * ds * k[d];
            dk[d] += scale * ds * q[d];
          }
          for (int64_t col = 0; col < c.value_dim; ++col) dv[col] += weight * dout[col];
        }
      }
    }
  }
}

}  // namespace

int naive_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t err_len) {
  return dispatch_backward_v2(call, grad, err, err_len, [](const auto& c, const auto& g) { naive_gradients(c, g); });
}

}  // namespace attncheck
