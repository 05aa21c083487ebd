// The ABI v2 logit of one key, step by step, and what each step may cost a
// correct implementation (docs/tolerance.md, "Version 2"). The spec's order:
//   s = scale * (q_i . k_j)                the score (its error: bound_arithmetic.h logit_error)
//   c = softcap * tanh(s / softcap)        if softcap > 0
//   b = c + bias[b][h][i][j]               if bias
//   z = b - slope_h * |d_i - j|            if alibi_slopes
// Every intermediate is kept: the bound charges each rounding on the value it
// rounds. Shared by the careful path (careful_row.cpp) and the representable
// domain (oracle.cpp), so both see the same chain.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "oracle/bound_arithmetic.h"
#include "problem/problem.h"

namespace attncheck::oracle_detail {

// Every libm tanh we know (glibc's tanhf and tanh, CUDA's tanhf) is within 2
// ulps; Eigen's rational approximation of tanh for float within a few. An exp
// based tanh without expm1 is not accurate near 0 and not allowed here.
inline constexpr double kTanhUlps = 4;

// The logit transforms of one query row (i of head bh); v1 problems have none.
struct RowTransform {
  double softcap = 0;               // 0: none
  const double* bias = nullptr;     // [kv_len]: the row's bias (broadcast resolved), or null
  bool alibi = false;
  double slope = 0;                 // ALiBi slope of the head
  int64_t diagonal = 0;             // d_i, where ALiBi aligns
  bool any() const { return softcap > 0 || bias != nullptr || alibi; }
};

inline RowTransform row_transform(const Problem& p, int64_t bh, int64_t i) {
  RowTransform t;
  t.softcap = p.softcap;
  if (p.has_bias()) t.bias = &p.bias[p.bias_at(bh, i, 0)];  // contiguous in j (Broadcast::at)
  t.alibi = !p.alibi_slopes.empty();
  if (t.alibi) t.slope = p.slope_of(bh);
  t.diagonal = p.diagonal(bh / p.shape.heads, i);
  return t;
}

// The chain's values for key j, in H (double, or long double for f64 problems).
template <class H> struct LogitChain {
  H score = 0, capped = 0, biased = 0, alibi = 0, z = 0;
};

template <class H> LogitChain<H> logit_chain(const RowTransform& t, int64_t j, H score) {
  LogitChain<H> c;
  c.score = score;
  const H cap = static_cast<H>(t.softcap);
  c.capped = t.softcap > 0 ? cap * std::tanh(score / cap) : score;
  c.biased = t.bias ? c.capped + static_cast<H>(t.bias[j]) : c.capped;
  if (t.alibi) {
    const int64_t dist = t.diagonal > j ? t.diagonal - j : j - t.diagonal;
    c.alibi = static_cast<H>(t.slope) * static_cast<H>(dist);
  }
  c.z = c.biased - c.alibi;
  return c;
}

// What the transforms add to key j's logit error in arithmetic `ar`, beyond
// logit_error's terms (whose |s| is then the final logit z: its 16-bit
// storage). The score's own error passes through the chain unamplified: the
// soft-cap's derivative sech^2(s / c) is at most 1, the bias and ALiBi terms
// are added. Each step rounds once in the compute type (tanh within
// kTanhUlps), and every intermediate but the last may be stored in 16 bits:
//   softcap  (2u + u16) |s|          s / c (or s * (1/c), two roundings), s stored
//            (kTanhUlps + 1) u |c|   tanh, and the product by the cap
//   bias     u |b|                   the sum (the bias itself is exact in the dtype)
//   alibi    (u + u16) |slope d|     the product (|d_i - j| is an exact integer), stored
//            u |z|                   the subtraction
// plus u16 on c (when a bias or ALiBi follows) and on b (when ALiBi follows).
template <class H> double transform_error(const Arithmetic& ar, const RowTransform& t, const LogitChain<H>& c) {
  const double s = std::abs(static_cast<double>(c.score)), cap = std::abs(static_cast<double>(c.capped));
  const double bia = std::abs(static_cast<double>(c.biased)), ali = std::abs(static_cast<double>(c.alibi));
  const double z = std::abs(static_cast<double>(c.z));
  double e = 0;
  if (t.softcap > 0) {
    e += (2 * ar.u + ar.u16) * s + (kTanhUlps + 1) * ar.u * cap;
    if (t.bias || t.alibi) e += ar.u16 * cap;
  } else if (t.bias || t.alibi) {
    e += ar.u16 * s;  // the score stored before the next step
  }
  if (t.bias) {
    e += ar.u * bia;
    if (t.alibi) e += ar.u16 * bia;
  }
  if (t.alibi) e += (ar.u + ar.u16) * ali + ar.u * z;
  return e;
}

// The largest magnitude along the chain: what the representable domain holds.
template <class H> double chain_magnitude(const LogitChain<H>& c) {
  using std::abs;
  return static_cast<double>(std::max({abs(c.score), abs(c.capped), abs(c.biased), abs(c.alibi), abs(c.z)}));
}

}  // namespace attncheck::oracle_detail
