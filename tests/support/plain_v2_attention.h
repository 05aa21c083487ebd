// Straightforward ABI v2 attention in a dtype's own arithmetic, for the bound's
// tests (tests/core/oracle_v2_test.cpp) and its validation (bench/validate_bound.cpp):
// correct implementations that the bound must never flag. T is the compute
// type (float for f32, f16 and bf16; double for f64), inputs read exactly,
// outputs rounded to the problem's dtype, lse returned as float.
//   plain_two_pass  the spec's formulas in order, one row at a time: dot
//       products summed sequentially, the logit chain (scale, soft-cap, bias,
//       ALiBi), max (with the sink), exp, sum, division, P.V. With eager16
//       (f16/bf16) every intermediate is rounded to the 16-bit format, as
//       eager PyTorch on 16-bit tensors does: the scores, each step of the
//       chain, the ALiBi term, the normalised weights.
//   plain_streaming FlashAttention style: keys in tiles of 16, running max,
//       rescaled sum and accumulator, the sink merged at the end, out = acc / l,
//       lse = m + log l.
// Shapes: out [batch][heads][q_len][value_dim], lse [batch][heads][q_len]
// (padding rows left 0; a row that sees no key: out 0, lse the sink or -inf).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "problem/dtype.h"
#include "problem/problem.h"

namespace attncheck::testing {

struct PlainResult {
  std::vector<double> out, lse;
};

// The logit of key j for row i of head bh from its scaled score, in T, with
// `r16` applied after each step (identity unless eager16).
template <class T, class R> T plain_logit(const Problem& p, int64_t bh, int64_t i, int64_t j, T s, R r16) {
  s = r16(s);
  if (p.softcap > 0) {
    const T cap = static_cast<T>(p.softcap);
    s = r16(cap * std::tanh(s / cap));
  }
  if (p.has_bias()) s = r16(s + static_cast<T>(p.bias[p.bias_at(bh, i, j)]));
  if (!p.alibi_slopes.empty()) {
    const int64_t d = p.diagonal(bh / p.shape.heads, i);
    const T term = r16(static_cast<T>(p.alibi_slopes[bh % p.shape.heads]) * static_cast<T>(d > j ? d - j : j - d));
    s = r16(s - term);
  }
  return s;
}

template <class T> T plain_score(const Problem& p, int64_t bh, int64_t i, int64_t j) {
  const int64_t kv = p.kv_of(bh);
  T dot = 0;
  for (int64_t d = 0; d < p.shape.head_dim; ++d)
    dot += static_cast<T>(p.q[p.q_at(bh, i, d)]) * static_cast<T>(p.k[p.k_at(kv, j, d)]);
  return static_cast<T>(p.effective_scale()) * dot;
}

template <class T> PlainResult plain_two_pass(const Problem& p, bool eager16) {
  const Shape& sh = p.shape;
  PlainResult res{std::vector<double>(sh.out_size(), 0.0), std::vector<double>(sh.rows(), 0.0)};
  const bool narrow = eager16 && compute_dtype(p.dtype) != p.dtype;
  const auto r16 = [&](T x) { return narrow ? static_cast<T>(round_to(p.dtype, static_cast<double>(x))) : x; };
  const T minus_inf = -std::numeric_limits<T>::infinity();
  std::vector<T> z(sh.kv_len);
  std::vector<uint8_t> seen(sh.kv_len);
  for (int64_t bh = 0; bh < sh.batch * sh.heads; ++bh)
    for (int64_t i = 0; i < p.q_len_of(bh / sh.heads); ++i) {
      const int64_t kv = p.kv_of(bh), row = bh * sh.q_len + i;
      const bool sink = !p.sinks.empty();
      const T s = sink ? static_cast<T>(p.sink_of(bh)) : minus_inf;
      T m = s;
      bool any = false;
      for (int64_t j = 0; j < sh.kv_len; ++j) {
        seen[j] = p.visible(bh, i, j);
        if (!seen[j]) continue;
        any = true;
        z[j] = plain_logit<T>(p, bh, i, j, plain_score<T>(p, bh, i, j), r16);
        m = std::max(m, z[j]);
      }
      if (!any) {
        res.lse[row] = static_cast<double>(static_cast<float>(s));
        continue;
      }
      T l = sink ? std::exp(s - m) : T(0);
      for (int64_t j = 0; j < sh.kv_len; ++j)
        if (seen[j]) {
          z[j] = std::exp(z[j] - m);
          l += z[j];
        }
      for (int64_t j = 0; j < sh.kv_len; ++j)
        if (seen[j]) z[j] = r16(z[j] / l);  // the normalised weights (16-bit tensors in eager)
      for (int64_t c = 0; c < sh.value_dim; ++c) {
        T acc = 0;
        for (int64_t j = 0; j < sh.kv_len; ++j)
          if (seen[j]) acc += z[j] * static_cast<T>(p.v[p.v_at(kv, j, c)]);
        res.out[p.out_at(bh, i, c)] = round_to(p.dtype, static_cast<double>(acc));
      }
      res.lse[row] = static_cast<double>(static_cast<float>(m + std::log(l)));
    }
  return res;
}

template <class T> PlainResult plain_streaming(const Problem& p) {
  const Shape& sh = p.shape;
  constexpr int64_t kTile = 16;
  PlainResult res{std::vector<double>(sh.out_size(), 0.0), std::vector<double>(sh.rows(), 0.0)};
  const auto same = [](T x) { return x; };
  const T minus_inf = -std::numeric_limits<T>::infinity();
  std::vector<T> acc(sh.value_dim), w(kTile);
  for (int64_t bh = 0; bh < sh.batch * sh.heads; ++bh)
    for (int64_t i = 0; i < p.q_len_of(bh / sh.heads); ++i) {
      const int64_t kv = p.kv_of(bh), row = bh * sh.q_len + i;
      T m = minus_inf, l = 0;
      std::fill(acc.begin(), acc.end(), T(0));
      for (int64_t j0 = 0; j0 < sh.kv_len; j0 += kTile) {
        const int64_t j1 = std::min(sh.kv_len, j0 + kTile);
        T tile_max = minus_inf;
        for (int64_t j = j0; j < j1; ++j) {
          w[j - j0] = p.visible(bh, i, j) ? plain_logit<T>(p, bh, i, j, plain_score<T>(p, bh, i, j), same) : minus_inf;
          tile_max = std::max(tile_max, w[j - j0]);
        }
        if (tile_max == minus_inf) continue;
        const T m_new = std::max(m, tile_max);
        const T rescale = std::exp(m - m_new);
        l *= rescale;
        for (T& a : acc) a *= rescale;
        for (int64_t j = j0; j < j1; ++j) {
          if (w[j - j0] == minus_inf) continue;  // hidden or padding: its value may be NaN
          const T e = std::exp(w[j - j0] - m_new);
          l += e;
          for (int64_t c = 0; c < sh.value_dim; ++c) acc[c] += e * static_cast<T>(p.v[p.v_at(kv, j, c)]);
        }
        m = m_new;
      }
      if (!p.sinks.empty()) {  // one more term of the denominator, with value 0
        const T s = static_cast<T>(p.sink_of(bh));
        const T m_new = std::max(m, s);
        const T rescale = std::exp(m - m_new);
        l = l * rescale + std::exp(s - m_new);
        for (T& a : acc) a *= rescale;
        m = m_new;
      }
      if (m == minus_inf) {  // no key and no sink
        res.lse[row] = -std::numeric_limits<double>::infinity();
        continue;
      }
      for (int64_t c = 0; c < sh.value_dim; ++c) res.out[p.out_at(bh, i, c)] = round_to(p.dtype, static_cast<double>(acc[c] / l));
      res.lse[row] = static_cast<double>(static_cast<float>(m + std::log(l)));
    }
  return res;
}

}  // namespace attncheck::testing
