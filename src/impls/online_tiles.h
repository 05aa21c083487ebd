// The tiles that online's forward (online.cpp) and backward
// (online_backward.cpp) stream over: kKeyTile keys at a time, a compile-time
// trip count for the vector loops, the two inner loops both passes share, and
// the logit chain (tile_logits) both apply to a tile of dot products.
// Each pass's block function is compiled once per vector ISA
// (ATTNCHECK_VECTOR_CLONES); the helpers here are always inlined into it, so
// that each clone compiles them with its own instruction set.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "impls/typed_call_v2.h"

// GCC and clang on x86-64: one clone per ISA, chosen by an ifunc resolver at
// load time. ISA-only targets ("avx512f", not "arch=..."): the clones keep the
// default tuning, so the ordinary inline functions they call (TypedCallV2's
// accessors, std::min) still inline into them. Elsewhere, or with
// -DATTNCHECK_NO_TARGET_CLONES, one version built with the build's flags.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(ATTNCHECK_NO_TARGET_CLONES) && \
    defined(__has_attribute)
#if __has_attribute(target_clones)
#define ATTNCHECK_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef ATTNCHECK_VECTOR_CLONES
#define ATTNCHECK_VECTOR_CLONES
#endif

#define ATTNCHECK_INLINE inline __attribute__((always_inline))

namespace attncheck::online_tiles {

constexpr int64_t kKeyTile = 32;  // keys per step; a compile-time trip count for the vector loops

// scores[jj] = q . k_jj for one query row over one key tile. k_t is the tile
// transposed, [head_dim][kKeyTile], zero past the tile's real keys, so the
// inner loop is a contiguous axpy (no reduction: vectorises without -ffast-math).
// Four dimensions per pass over scores, added one after the other, so each
// score sums q_d k_d in order d = 0, 1, ... as a plain loop would, with a
// quarter of the loads and stores of scores.
template <class T>
ATTNCHECK_INLINE void tile_dot(const T* __restrict q, const T* __restrict k_t, int64_t head_dim, T* __restrict scores) {
  for (int64_t jj = 0; jj < kKeyTile; ++jj) scores[jj] = 0;
  int64_t d = 0;
  for (; d + 4 <= head_dim; d += 4) {
    const T q0 = q[d], q1 = q[d + 1], q2 = q[d + 2], q3 = q[d + 3];
    const T* __restrict k0 = k_t + d * kKeyTile;
    for (int64_t jj = 0; jj < kKeyTile; ++jj) {
      T sum = scores[jj];
      sum += q0 * k0[jj];
      sum += q1 * k0[kKeyTile + jj];
      sum += q2 * k0[2 * kKeyTile + jj];
      sum += q3 * k0[3 * kKeyTile + jj];
      scores[jj] = sum;
    }
  }
  for (; d < head_dim; ++d) {
    const T qd = q[d];
    const T* __restrict kd = k_t + d * kKeyTile;
    for (int64_t jj = 0; jj < kKeyTile; ++jj) scores[jj] += qd * kd[jj];
  }
}

// acc[col] = acc[col] * alpha + sum_jj p[jj] * v[jj][col]: v holds `keys` rows
// of [value_dim], row jj at v + jj * v_row (the view's row stride). Four keys
// per pass over acc, added in key order as a plain loop would.
template <class T>
ATTNCHECK_INLINE void tile_accumulate(T* __restrict acc, T alpha, const T* __restrict p, const T* __restrict v,
                                      int64_t v_row, int64_t keys, int64_t value_dim) {
  for (int64_t col = 0; col < value_dim; ++col) acc[col] *= alpha;
  int64_t jj = 0;
  for (; jj + 4 <= keys; jj += 4) {
    const T p0 = p[jj], p1 = p[jj + 1], p2 = p[jj + 2], p3 = p[jj + 3];
    const T* __restrict v0 = v + jj * v_row;
    const T* __restrict v1 = v0 + v_row;
    const T* __restrict v2 = v1 + v_row;
    const T* __restrict v3 = v2 + v_row;
    for (int64_t col = 0; col < value_dim; ++col) {
      T sum = acc[col];
      sum += p0 * v0[col];
      sum += p1 * v1[col];
      sum += p2 * v2[col];
      sum += p3 * v3[col];
      acc[col] = sum;
    }
  }
  for (; jj < keys; ++jj) {
    const T pj = p[jj];
    const T* __restrict vj = v + jj * v_row;
    for (int64_t col = 0; col < value_dim; ++col) acc[col] += pj * vj[col];
  }
}

// s[jj] holds q_i . k_(j0 + jj) for the kKeyTile keys of one tile; makes them
// the logits of row i of head h: scaled, soft-capped, biased and ALiBi'd for
// the keys in the row's range [begin, end) (tile-relative) that the mask and
// bias leave visible, -inf for every other one. The mask and bias are read at
// those keys only, never at padding keys. With `slope` (the backward's), also
// slope[jj] = 1 - tanh^2(s / softcap), dz/ds (1 without a soft-cap): the
// backward recomputes the forward's weights by the very same operations.
template <class T>
ATTNCHECK_INLINE void tile_logits(const TypedCallV2<T>& c, int64_t b, int64_t h, int64_t i, int64_t j0,
                                  int64_t begin, int64_t end, T* __restrict s, T* __restrict slope = nullptr) {
  const T scale = c.abi_scale();
  const T minus_inf = -std::numeric_limits<T>::infinity();
  // Split loops rather than one select on jj: g++ 12 vectorises these.
  for (int64_t jj = 0; jj < begin; ++jj) s[jj] = minus_inf;
  for (int64_t jj = begin; jj < end; ++jj) s[jj] *= scale;
  for (int64_t jj = end; jj < kKeyTile; ++jj) s[jj] = minus_inf;
  if (slope) std::fill(slope, slope + kKeyTile, T(1));
  if (c.softcap > 0) {
    const T cap = static_cast<T>(c.softcap);
    if (slope) {
      for (int64_t jj = begin; jj < end; ++jj) {
        const T t = std::tanh(s[jj] / cap);
        s[jj] = cap * t;
        slope[jj] = 1 - t * t;
      }
    } else {
      for (int64_t jj = begin; jj < end; ++jj) s[jj] = cap * std::tanh(s[jj] / cap);
    }
  }
  if (c.bias) {
    // A -inf bias hides the key, even where q . k overflowed to +inf.
    const T* bias = c.bias.row(b, h, i) + j0;
    for (int64_t jj = begin; jj < end; ++jj) s[jj] = bias[jj] == minus_inf ? minus_inf : s[jj] + bias[jj];
  }
  if (c.alibi_slopes) {
    const T slope = static_cast<T>(c.alibi_slopes[h]);
    const int64_t diag = c.diagonal(b, i);
    for (int64_t jj = begin; jj < end; ++jj) {
      const int64_t j = j0 + jj;
      s[jj] -= slope * static_cast<T>(diag > j ? diag - j : j - diag);
    }
  }
  if (c.mask) {
    const uint8_t* m = c.mask.row(b, h, i) + j0;
    for (int64_t jj = begin; jj < end; ++jj) s[jj] = m[jj] ? s[jj] : minus_inf;
  }
}

}  // namespace attncheck::online_tiles
