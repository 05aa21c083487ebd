// The tiles that online's forward (online.cpp) and backward
// (online_backward.cpp) stream over: kKeyTile keys at a time, a compile-time
// trip count for the vector loops, the inner loops both passes share, and
// the logit chain (tile_logits) both apply to a tile of dot products.
// Each pass's block function is compiled once per vector ISA (vector_isa.h);
// the helpers here are always inlined into it, so that each build compiles
// them with its own instruction set.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "impls/typed_call_v2.h"

#define ATTNCHECK_INLINE inline __attribute__((always_inline))

namespace attncheck::online_tiles {

constexpr int64_t kKeyTile = 32;  // keys per step; a compile-time trip count for the vector loops

// scores[r][jj] = q_r . k_jj for R query rows over one key tile: row r of q
// at q + r * q_row, scores [R][kKeyTile]. k_t is the tile transposed,
// [head_dim][kKeyTile], zero past the tile's real keys, so the inner loop is a
// contiguous axpy (no reduction: vectorises without -ffast-math). The R rows
// share every load of k_t, and their R x kKeyTile sums stay in registers over
// the whole of head_dim (R = 4, f32: eight 16-float vectors); each score sums
// q_d k_d in order d = 0, 1, ... as a plain loop would.
template <int R, class T>
ATTNCHECK_INLINE void tile_dot_rows(const T* __restrict q, int64_t q_row, const T* __restrict k_t, int64_t head_dim,
                                    T* __restrict scores) {
  T sum[R][kKeyTile];
  for (int r = 0; r < R; ++r)
    for (int64_t jj = 0; jj < kKeyTile; ++jj) sum[r][jj] = 0;
  for (int64_t d = 0; d < head_dim; ++d) {
    const T* __restrict kd = k_t + d * kKeyTile;
    for (int r = 0; r < R; ++r) {
      const T qd = q[r * q_row + d];
      for (int64_t jj = 0; jj < kKeyTile; ++jj) sum[r][jj] += qd * kd[jj];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int64_t jj = 0; jj < kKeyTile; ++jj) scores[r * kKeyTile + jj] = sum[r][jj];
}

// acc_r[col] = acc_r[col] * alpha[r] + sum_jj p[r][jj] * v[jj][col] for R
// rows at once: acc row r at acc + r * value_dim, p [R][kKeyTile]; v holds
// `keys` rows of [value_dim], row jj at v + jj * v_row (the view's row
// stride). Each V element is loaded once for the R rows; four keys per pass
// over the accumulators, added in key order as a plain loop would.
template <int R, class T>
ATTNCHECK_INLINE void tile_accumulate_rows(T* __restrict acc, const T* __restrict alpha, const T* __restrict p,
                                           const T* __restrict v, int64_t v_row, int64_t keys, int64_t value_dim) {
  for (int r = 0; r < R; ++r)
    for (int64_t col = 0; col < value_dim; ++col) acc[r * value_dim + col] *= alpha[r];
  int64_t jj = 0;
  for (; jj + 4 <= keys; jj += 4) {
    T pr[R][4];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < 4; ++t) pr[r][t] = p[r * kKeyTile + jj + t];
    const T* __restrict v0 = v + jj * v_row;
    const T* __restrict v1 = v0 + v_row;
    const T* __restrict v2 = v1 + v_row;
    const T* __restrict v3 = v2 + v_row;
    for (int64_t col = 0; col < value_dim; ++col) {
      const T a0 = v0[col], a1 = v1[col], a2 = v2[col], a3 = v3[col];
      for (int r = 0; r < R; ++r) {
        T sum = acc[r * value_dim + col];
        sum += pr[r][0] * a0;
        sum += pr[r][1] * a1;
        sum += pr[r][2] * a2;
        sum += pr[r][3] * a3;
        acc[r * value_dim + col] = sum;
      }
    }
  }
  for (; jj < keys; ++jj) {
    const T* __restrict vj = v + jj * v_row;
    for (int r = 0; r < R; ++r) {
      const T pj = p[r * kKeyTile + jj];
      for (int64_t col = 0; col < value_dim; ++col) acc[r * value_dim + col] += pj * vj[col];
    }
  }
}

// The largest of x[0 .. kKeyTile), or its first NaN if it has one (a max
// over compares drops NaN, which must poison the row as it does in exact
// arithmetic). A tree of halvings, kKeyTile / 2 lanes wide at first, where a
// running max over the keys is a chain of kKeyTile dependent compares. Quiet
// compares: GCC does not vectorise a select on an ordered one (it traps on NaN).
template <class T>
ATTNCHECK_INLINE T tile_max(const T* __restrict x) {
  static_assert(kKeyTile == 32, "the halvings below are written for 32 keys");
  T m[16];
  int nans = 0;
  for (int64_t jj = 0; jj < kKeyTile; ++jj) nans += x[jj] != x[jj];
  for (int l = 0; l < 16; ++l) m[l] = __builtin_isgreater(x[l + 16], x[l]) ? x[l + 16] : x[l];
  for (int l = 0; l < 8; ++l) m[l] = __builtin_isgreater(m[l + 8], m[l]) ? m[l + 8] : m[l];
  for (int l = 0; l < 4; ++l) m[l] = __builtin_isgreater(m[l + 4], m[l]) ? m[l + 4] : m[l];
  for (int l = 0; l < 2; ++l) m[l] = __builtin_isgreater(m[l + 2], m[l]) ? m[l + 2] : m[l];
  const T most = __builtin_isgreater(m[1], m[0]) ? m[1] : m[0];
  if (nans == 0) return most;
  for (int64_t jj = 0; jj < kKeyTile; ++jj)
    if (x[jj] != x[jj]) return x[jj];
  return most;
}

// sum_jj x[jj] over one tile, pairwise: 16 + 16, then 8 + 8, ... Each weight
// goes through log2(kKeyTile) = 5 additions, where a running sum puts up to 31
// behind the first; a fixed order, so the same on every call and build.
template <class T>
ATTNCHECK_INLINE T tile_sum(const T* __restrict x) {
  static_assert(kKeyTile == 32, "the halvings below are written for 32 keys");
  T t[16];
  for (int l = 0; l < 16; ++l) t[l] = x[l] + x[l + 16];
  for (int l = 0; l < 8; ++l) t[l] = t[l] + t[l + 8];
  for (int l = 0; l < 4; ++l) t[l] = t[l] + t[l + 4];
  for (int l = 0; l < 2; ++l) t[l] = t[l] + t[l + 2];
  return t[0] + t[1];
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
    const T slope = static_cast<T>(c.slope(b, h));
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
