// A straightforward ABI v2 backward in a compute type T (float for f32, f16
// and bf16; double for f64), for the gradient bound's tests
// (tests/core/grad_oracle_test.cpp) and its validation (bench/validate_bound.cpp):
// a correct implementation the bound must never flag, and should come near.
// Per row, in T and in order: the scores summed sequentially over d, the
// logit chain (plain_v2_attention.h), the max (with the sink), exp, the sum,
// P = w / sum; dP_j = sum_c dO_c v_jc; D = rowsum(dO * O) from the
// implementation's own forward output (plain_two_pass, rounded to the dtype) or
// rowsum(P * dP) (`d_from_p`, softmax's backward as autograd does it);
// dS = P (dP - D), times 1 - tanh^2(s / cap) with a soft-cap; dq += scale dS k
// sequentially over keys, dk and dv summed in T over the rows (all heads of a
// GQA group, in order), each result rounded to the dtype at the end.
// With eager16 (f16/bf16) every intermediate is rounded to the 16-bit format,
// as autograd on 16-bit tensors does: the forward's scores, chain and weights
// (plain_two_pass's eager16), dP, D, dP - D, dS, the soft-cap's derivative,
// and each query head's dk and dv before the GQA group's sum (the backward of
// repeat_interleave).
// Shapes are q's, k's and v's; padding rows and keys are left 0.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "plain_v2_attention.h"
#include "problem/dtype.h"
#include "problem/problem.h"

namespace attncheck::testing {

struct PlainGrads {
  std::vector<double> dq, dk, dv;
};

// One backward fault (the zoo's, for the bound's sharpness tests): dS without
// the rowsum term (D = 0), dq without the scale, dk/dv of a GQA group from its
// first query head only, dV from the unnormalised weights exp(z - max), the
// soft-cap's derivative left out.
enum class BackwardFault { none, no_rowsum, dq_unscaled, gqa_first_head, dv_unnormalised, softcap_derivative_dropped };

template <class T>
PlainGrads plain_backward(const Problem& p, bool d_from_p = false, bool eager16 = false,
                          BackwardFault fault = BackwardFault::none) {
  const Shape& sh = p.shape;
  const PlainResult fwd = plain_two_pass<T>(p, eager16);
  std::vector<T> dq(sh.q_size(), 0), dk(sh.k_size(), 0), dv(sh.v_size(), 0);
  // One query head's dk and dv (eager16: rounded before the group's sum).
  std::vector<T> hk(sh.kv_len * sh.head_dim), hv(sh.kv_len * sh.value_dim);
  const T scale = static_cast<T>(p.effective_scale());
  const auto r16 = [&](T x) { return eager16 ? static_cast<T>(round_to(p.dtype, static_cast<double>(x))) : x; };
  std::vector<T> score(sh.kv_len), z(sh.kv_len), w(sh.kv_len), dp(sh.kv_len);
  for (int64_t bh = 0; bh < sh.batch * sh.heads; ++bh) {
    const int64_t kv = p.kv_of(bh);
    const bool first_of_group = (bh % sh.heads) % (sh.heads / sh.kv_head_count()) == 0;
    std::fill(hk.begin(), hk.end(), T(0));
    std::fill(hv.begin(), hv.end(), T(0));
    for (int64_t i = 0; i < sh.q_len; ++i) {
      if (!p.row_exists(bh, i) || !p.row_sees_any_key(bh, i)) continue;
      T m = p.sinks.empty() ? -std::numeric_limits<T>::infinity() : static_cast<T>(p.sink_of(bh));
      for (int64_t j = 0; j < sh.kv_len; ++j) {
        if (!p.visible(bh, i, j)) continue;
        score[j] = plain_score<T>(p, bh, i, j);
        z[j] = plain_logit<T>(p, bh, i, j, score[j], r16);
        m = std::max(m, z[j]);
      }
      T total = p.sinks.empty() ? T(0) : std::exp(static_cast<T>(p.sink_of(bh)) - m);
      for (int64_t j = 0; j < sh.kv_len; ++j)
        if (p.visible(bh, i, j)) total += (w[j] = std::exp(z[j] - m));
      T D = 0;
      for (int64_t j = 0; j < sh.kv_len; ++j) {
        if (!p.visible(bh, i, j)) continue;
        w[j] = r16(w[j] / total);  // now P
        T acc = 0;
        for (int64_t c = 0; c < sh.value_dim; ++c)
          acc += static_cast<T>(p.dout[p.out_at(bh, i, c)]) * static_cast<T>(p.v[p.v_at(kv, j, c)]);
        dp[j] = r16(acc);
        if (d_from_p) D += w[j] * dp[j];
      }
      if (!d_from_p)
        for (int64_t c = 0; c < sh.value_dim; ++c)
          D += static_cast<T>(p.dout[p.out_at(bh, i, c)]) * static_cast<T>(fwd.out[p.out_at(bh, i, c)]);
      D = fault == BackwardFault::no_rowsum ? T(0) : r16(D);
      for (int64_t j = 0; j < sh.kv_len; ++j) {
        if (!p.visible(bh, i, j)) continue;
        T ds = r16(w[j] * r16(dp[j] - D));
        if (p.softcap > 0 && fault != BackwardFault::softcap_derivative_dropped) {
          const T th = r16(std::tanh(r16(score[j]) / static_cast<T>(p.softcap)));
          ds = r16(ds * r16(T(1) - th * th));
        }
        for (int64_t d = 0; d < sh.head_dim; ++d) {
          dq[p.q_at(bh, i, d)] += (fault == BackwardFault::dq_unscaled ? T(1) : scale) * ds * static_cast<T>(p.k[p.k_at(kv, j, d)]);
          hk[j * sh.head_dim + d] += scale * ds * static_cast<T>(p.q[p.q_at(bh, i, d)]);
        }
        for (int64_t c = 0; c < sh.value_dim; ++c)
          hv[j * sh.value_dim + c] += (fault == BackwardFault::dv_unnormalised ? w[j] * total : w[j]) *
                                      static_cast<T>(p.dout[p.out_at(bh, i, c)]);
      }
    }
    if (fault == BackwardFault::gqa_first_head && !first_of_group) continue;
    for (int64_t j = 0; j < sh.kv_len; ++j) {
      for (int64_t d = 0; d < sh.head_dim; ++d) dk[p.k_at(kv, j, d)] += r16(hk[j * sh.head_dim + d]);
      for (int64_t c = 0; c < sh.value_dim; ++c) dv[p.v_at(kv, j, c)] += r16(hv[j * sh.value_dim + c]);
    }
  }
  PlainGrads g;
  const auto rounded = [&](const std::vector<T>& x) {
    std::vector<double> r(x.size());
    for (std::size_t t = 0; t < x.size(); ++t) r[t] = round_to(p.dtype, static_cast<double>(x[t]));
    return r;
  };
  g.dq = rounded(dq);
  g.dk = rounded(dk);
  g.dv = rounded(dv);
  return g;
}

}  // namespace attncheck::testing
