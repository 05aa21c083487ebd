// Attention kernels for 16-bit formats that store or accumulate in 16 bits,
// shared by the bound's tests (tests/core/bound_domain_test.cpp) and its
// validation (bench/validate_bound.cpp), so both judge the same arithmetic:
//   flash_forward<false, false>        FlashAttention-2 style: logits, running max,
//       exp and row sum in f32; the weights rounded to the 16-bit format before
//       P.V, which accumulates in f32. Correct under docs/tolerance.md section 6.
//   flash_forward<true, false>         the same, flushing 16-bit weights below the
//       smallest normal (hardware without 16-bit subnormals). Correct.
//   flash_forward<false, false, true>  unfused: softmax in f32, the normalised
//       weights rounded to 16 bits, P.V in f32. Correct.
//   flash_forward<true, false, true>   the same, flushing normalised weights: not
//       correct (a row of 2^14 + 1 equal logits comes out zero).
//   flash_forward<false, true>         `acc16`: the P.V accumulator kept in the
//       16-bit format itself: a fault (the ABI accumulates 16-bit formats in f32).
// Tensors as in impls/typed_call.h: q [bh][q_len][head_dim], k [bh][kv_len][head_dim],
// v [bh][kv_len][value_dim], out [bh][q_len][value_dim]; f16 and bf16 only.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "impls/typed_call.h"

namespace attncheck::testing {

constexpr int64_t kTile = 32;

// Rounds a float to the 16-bit format Half and back, flushing results below the
// format's smallest normal to zero when Ftz.
template <class Half, bool Ftz>
float to16(float x) {
  const float r = static_cast<float>(Half(x));
  if constexpr (Ftz) {
    const float min_normal = static_cast<float>((std::numeric_limits<Half>::min)());
    if (std::abs(r) < min_normal) return 0.0f;
  }
  return r;
}

// Streaming softmax over tiles of kTile keys, one query row at a time.
// Weights16: the weights are rounded to Half (optionally flushed) before P.V.
// Acc16: the P.V accumulator is rounded to Half after every update, as a
// matrix unit with a 16-bit accumulator does (the fault).
template <class Half, bool Ftz, bool Acc16>
void flash_row_kernel(const TypedCall<float>& c) {
  const float scale = c.abi_scale();
  const float minus_inf = -std::numeric_limits<float>::infinity();
  std::vector<float> s(kTile), acc(c.value_dim);
  const auto narrow = [](float x) { return Acc16 ? static_cast<float>(Half(x)) : x; };
  for (int64_t bh = 0; bh < c.heads_total(); ++bh)
    for (int64_t i = 0; i < c.q_len; ++i) {
      const float* q = c.q_head(bh) + i * c.head_dim;
      float m = minus_inf, l = 0;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j0 = 0; j0 < c.kv_len; j0 += kTile) {
        const int64_t keys = std::min(kTile, c.kv_len - j0);
        float tile_max = minus_inf;
        for (int64_t jj = 0; jj < keys; ++jj) {
          const int64_t j = j0 + jj;
          float dot = 0;
          const float* k = c.k_head(bh) + j * c.head_dim;
          for (int64_t d = 0; d < c.head_dim; ++d) dot += q[d] * k[d];
          s[jj] = visible(c, bh, i, j) ? dot * scale : minus_inf;
          tile_max = std::max(tile_max, s[jj]);
        }
        const float new_max = std::max(m, tile_max);
        if (new_max == minus_inf) continue;
        const float alpha = std::exp(m - new_max);
        float tile_sum = 0;
        for (int64_t jj = 0; jj < keys; ++jj) {
          s[jj] = std::exp(s[jj] - new_max);
          tile_sum += s[jj];  // FlashAttention-2 sums the f32 weights
          if (!Acc16) s[jj] = to16<Half, Ftz>(s[jj]);
        }
        l = l * alpha + tile_sum;
        m = new_max;
        for (int64_t col = 0; col < c.value_dim; ++col) {
          float a = acc[col] * alpha;
          for (int64_t jj = 0; jj < keys; ++jj) a = narrow(a + s[jj] * c.v_head(bh)[(j0 + jj) * c.value_dim + col]);
          acc[col] = a;
        }
      }
      float* out = c.out_head(bh) + i * c.value_dim;
      for (int64_t col = 0; col < c.value_dim; ++col) out[col] = l > 0 ? acc[col] / l : 0.0f;
    }
}

// Unfused, as `softmax(q k^T * scale) @ v` runs on 16-bit tensors: the row's
// max and sum in f32, the normalised weights p_j = exp(s_j - m) / L rounded
// to Half (optionally flushed) and stored, then P.V accumulated in f32.
template <class Half, bool Ftz>
void unfused_kernel(const TypedCall<float>& c) {
  const float scale = c.abi_scale();
  const float minus_inf = -std::numeric_limits<float>::infinity();
  std::vector<float> s(c.kv_len);
  for (int64_t bh = 0; bh < c.heads_total(); ++bh)
    for (int64_t i = 0; i < c.q_len; ++i) {
      const float* q = c.q_head(bh) + i * c.head_dim;
      float m = minus_inf, l = 0;
      for (int64_t j = 0; j < c.kv_len; ++j) {
        const float* k = c.k_head(bh) + j * c.head_dim;
        float dot = 0;
        for (int64_t d = 0; d < c.head_dim; ++d) dot += q[d] * k[d];
        s[j] = visible(c, bh, i, j) ? dot * scale : minus_inf;
        m = std::max(m, s[j]);
      }
      float* out = c.out_head(bh) + i * c.value_dim;
      if (m == minus_inf) { std::fill(out, out + c.value_dim, 0.0f); continue; }
      for (int64_t j = 0; j < c.kv_len; ++j) l += s[j] = std::exp(s[j] - m);
      for (int64_t j = 0; j < c.kv_len; ++j) s[j] = to16<Half, Ftz>(s[j] / l);
      for (int64_t col = 0; col < c.value_dim; ++col) {
        float a = 0;
        for (int64_t j = 0; j < c.kv_len; ++j) a += s[j] * c.v_head(bh)[j * c.value_dim + col];
        out[col] = a;
      }
    }
}

// Only the 16-bit formats: the kernel needs to know which one.
template <bool Ftz, bool Acc16, bool Unfused = false>
int flash_forward(const attncheck_call* call, char* err, size_t err_len) {
  if (!call || (call->dtype != ATTNCHECK_F16 && call->dtype != ATTNCHECK_BF16))
    return report(err, err_len, ATTNCHECK_UNSUPPORTED, "16-bit formats only");
  const bool f16 = call->dtype == ATTNCHECK_F16;
  return dispatch(call, err, err_len, [f16](const auto& c) {
    if constexpr (std::is_same_v<std::decay_t<decltype(c)>, TypedCall<float>>) {
      if constexpr (Unfused) {
        if (f16) unfused_kernel<Eigen::half, Ftz>(c);
        else unfused_kernel<Eigen::bfloat16, Ftz>(c);
      } else {
        if (f16) flash_row_kernel<Eigen::half, Ftz, Acc16>(c);
        else flash_row_kernel<Eigen::bfloat16, Ftz, Acc16>(c);
      }
    }
  });
}

}  // namespace attncheck::testing
