// The spec's formulas (include/attncheck/plugin_v2.h, "Visibility" and
// "Logits") evaluated directly in __float128 (113-bit significand, GCC's
// libquadmath), written from the spec's text and not from Problem::visible or
// logit_from_score, so that the oracle's reading of the spec is checked by a
// second one. Slow and plain: for small problems in tests only.
//   out [batch][heads][q_len][value_dim], lse [batch][heads][q_len]
// Padding rows get out 0 and lse 0; a row that sees no key out 0 and lse s
// (or -inf without sinks).
#pragma once

#include <quadmath.h>

#include <cstdint>
#include <vector>

#include "problem/problem.h"

namespace attncheck::testing {

struct QuadAttention {
  std::vector<__float128> out, lse;
};

inline QuadAttention spec_attention_quad(const Problem& p) {
  const Shape& sh = p.shape;
  const int64_t H = sh.heads, KVH = sh.kv_head_count();
  QuadAttention r;
  r.out.assign(sh.out_size(), 0);
  r.lse.assign(sh.rows(), 0);
  const __float128 scale = p.effective_scale();
  for (int64_t b = 0; b < sh.batch; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t bh = b * H + h;
      const int64_t kvh = h / (H / KVH);  // query head h reads kv head h / (heads / kv_heads)
      const int64_t Lq = p.q_lens.empty() ? sh.q_len : p.q_lens[b];
      const int64_t Lk = p.kv_lens.empty() ? sh.kv_len : p.kv_lens[b];
      for (int64_t i = 0; i < Lq; ++i) {
        const int64_t d = p.causal == Causal::top_left ? i : i + Lk - Lq;
        std::vector<int64_t> keys;
        std::vector<__float128> z;
        for (int64_t j = 0; j < Lk; ++j) {
          if ((p.causal == Causal::top_left || p.causal == Causal::bottom_right) && !(j <= d)) continue;
          if (p.window_left >= 0 && !(j >= d - p.window_left)) continue;
          if (p.window_right >= 0 && !(j <= d + p.window_right)) continue;
          if (!p.mask.empty() && p.mask[p.mask_broadcast.at(sh, b, h, i, j)] == 0) continue;
          const double bias = p.bias.empty() ? 0.0 : p.bias[p.bias_broadcast.at(sh, b, h, i, j)];
          if (bias == -__builtin_inf()) continue;
          __float128 dot = 0;
          for (int64_t c = 0; c < sh.head_dim; ++c)
            dot += static_cast<__float128>(p.q[((b * H + h) * sh.q_len + i) * sh.head_dim + c]) *
                   static_cast<__float128>(p.k[((b * KVH + kvh) * sh.kv_len + j) * sh.head_dim + c]);
          __float128 zj = scale * dot;
          if (p.softcap > 0) zj = static_cast<__float128>(p.softcap) * tanhq(zj / static_cast<__float128>(p.softcap));
          zj += bias;
          if (!p.alibi_slopes.empty()) zj -= static_cast<__float128>(p.alibi_slopes[h]) * fabsq(static_cast<__float128>(d - j));
          keys.push_back(j);
          z.push_back(zj);
        }
        const bool sink = !p.sinks.empty();
        const __float128 s = sink ? static_cast<__float128>(p.sinks[h]) : -__builtin_inf();
        const int64_t row = bh * sh.q_len + i;
        if (keys.empty()) {
          r.lse[row] = s;
          continue;
        }
        __float128 m = s;
        for (auto x : z) m = x > m ? x : m;
        __float128 L = sink ? expq(s - m) : 0;
        for (auto x : z) L += expq(x - m);
        r.lse[row] = m + logq(L);
        for (int64_t c = 0; c < sh.value_dim; ++c) {
          __float128 acc = 0;
          for (std::size_t t = 0; t < keys.size(); ++t)
            acc += expq(z[t] - m) * static_cast<__float128>(p.v[((b * KVH + kvh) * sh.kv_len + keys[t]) * sh.value_dim + c]);
          r.out[(bh * sh.q_len + i) * sh.value_dim + c] = acc / L;
        }
      }
    }
  return r;
}

}  // namespace attncheck::testing
