// Two-pass attention kernels (v1 ABI; f32, f16, bf16 computed in f32) for the
// accuracy grade's and the accuracy law's tests (tests/core/accuracy_grade_test.cpp;
// docs/tolerance.md, "The typical error"): one careful, and two that are
// correct in their semantics but far less accurate than a careful kernel of
// their dtype, as kernels written outside the project were (issue #33):
//   Sloppiness::none      the careful kernel: dot products, sums over keys
//       and P.V summed sequentially in f32, std::exp.
//   Sloppiness::poly_exp  exp is a degree-4 polynomial after Cody-Waite
//       reduction (|r| <= ln2/2): relative error up to 4.2e-5, ~350 ulp of f32.
//   Sloppiness::qk16      (f16, bf16 only) q.k summed in the 16-bit format:
//       every product and partial sum rounded to it.
// Tensors as in impls/typed_call.h: q [bh][q_len][head_dim], k [bh][kv_len][head_dim],
// v [bh][kv_len][value_dim], out [bh][q_len][value_dim].
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include <Eigen/Core>

#include "impls/typed_call.h"

namespace attncheck::testing {

enum class Sloppiness { none, poly_exp, qk16 };

// exp(x) by x = n ln2 + r and the degree-4 Taylor polynomial of exp(r).
inline float poly4_exp(float x) {
  if (x == -std::numeric_limits<float>::infinity()) return 0.0f;
  const float n = std::nearbyint(x * 1.44269504f);
  const float r = x - n * 0.693147181f;
  const float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24))));
  return std::ldexp(p, static_cast<int>(n));
}

template <Sloppiness S, class Half>
void sloppy_kernel(const TypedCall<float>& c) {
  const float scale = c.abi_scale();
  const float minus_inf = -std::numeric_limits<float>::infinity();
  std::vector<float> s(c.kv_len);
  for (int64_t bh = 0; bh < c.heads_total(); ++bh)
    for (int64_t i = 0; i < c.q_len; ++i) {
      const float* q = c.q_head(bh) + i * c.head_dim;
      float m = minus_inf;
      for (int64_t j = 0; j < c.kv_len; ++j) {
        const float* k = c.k_head(bh) + j * c.head_dim;
        float dot = 0;
        for (int64_t d = 0; d < c.head_dim; ++d) {
          if constexpr (S == Sloppiness::qk16)
            dot = static_cast<float>(Half(dot + static_cast<float>(Half(q[d] * k[d]))));
          else
            dot += q[d] * k[d];
        }
        s[j] = visible(c, bh, i, j) ? dot * scale : minus_inf;
        m = std::max(m, s[j]);
      }
      float* out = c.out_head(bh) + i * c.value_dim;
      if (m == minus_inf) {
        std::fill(out, out + c.value_dim, 0.0f);
        continue;
      }
      float l = 0;
      for (int64_t j = 0; j < c.kv_len; ++j) l += s[j] = S == Sloppiness::poly_exp ? poly4_exp(s[j] - m) : std::exp(s[j] - m);
      for (int64_t col = 0; col < c.value_dim; ++col) {
        float a = 0;
        for (int64_t j = 0; j < c.kv_len; ++j) a += s[j] * c.v_head(bh)[j * c.value_dim + col];
        out[col] = a / l;
      }
    }
}

// The kernel as a v1 forward entry; qk16 refuses f32 (ATTNCHECK_UNSUPPORTED),
// every kind refuses f64.
template <Sloppiness S>
int sloppy_forward(const attncheck_call* call, char* err, size_t err_len) {
  if (!call || call->dtype == ATTNCHECK_F64 || (S == Sloppiness::qk16 && call->dtype == ATTNCHECK_F32))
    return report(err, err_len, ATTNCHECK_UNSUPPORTED, "not this dtype");
  const bool bf16 = call->dtype == ATTNCHECK_BF16;
  return dispatch(call, err, err_len, [bf16](const auto& c) {
    if constexpr (std::is_same_v<std::decay_t<decltype(c)>, TypedCall<float>>) {
      if (bf16) sloppy_kernel<S, Eigen::bfloat16>(c);
      else sloppy_kernel<S, Eigen::half>(c);
    }
  });
}

}  // namespace attncheck::testing
