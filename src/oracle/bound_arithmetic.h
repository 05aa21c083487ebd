// The arithmetic the bound allows (docs/tolerance.md): unit roundoffs, the
// classic gamma(n), and the per-key logit error e_j, shared by the oracle's
// careful scalar path (careful_row.cpp) and its blocked, vectorised path
// (fast_rows.cpp), so both derive the same bound from the same terms.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "oracle/oracle.h"
#include "problem/dtype.h"
#include "problem/kv_storage.h"

namespace attncheck::oracle_detail {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// gamma(n) = n u / (1 - n u): the relative error bound of n roundings in a row.
inline double gamma(double n, double u) {
  const double nu = n * u;
  return nu < 1 ? nu / (1 - nu) : kInf;
}

// The arithmetic an implementation in this dtype is allowed. f16/bf16 are
// stored in 16 bits but, as the ABI's dtypes are used in practice, computed
// and accumulated in f32; logits and weights may be stored in 16 bits between
// steps, and the output is rounded to 16 bits.
struct Arithmetic {
  double u;            // unit roundoff of the computation
  double u16;          // unit roundoff of the 16-bit storage, 0 for f32/f64
  double tiny;         // smallest normal of the computation (underflow, flush-to-zero)
  double out_floor;    // smallest subnormal of the storage (output rounding near zero)
  double weight_floor; // smallest normal of the 16-bit storage of the weights, 0 for f32/f64:
                       // a weight stored below it keeps only an absolute accuracy (or is flushed)
  double weight_step;  // half the 16-bit storage's smallest subnormal: rounding to a subnormal step
  double exp_ulps;     // error of one exp, in units of u (a logit error of exp_ulps * u)
  // ABI v3's stored K and V (docs/tolerance.md, "Stored K and V formats"): the relative
  // error of each real key element rounded once to the dtype plus the scale applied to the
  // logit after the dot product (one more rounding), charged on a_j; the same for values,
  // on sum_j p_j |v_jc|. 0 without a stored format (and for the oracle's own arithmetic).
  double kv_logit = 0;
  double kv_value = 0;
};

// Every libm and vectorised exp we know is within 2 ulps.
inline constexpr double kLibmExpUlps = 2;
// log in the lse (glibc's logf and log, CUDA's logf): within 2 ulps.
inline constexpr double kLogUlps = 2;

inline Arithmetic arithmetic_of(DType t) {
  const DType compute = compute_dtype(t);
  const bool stored_narrower = compute != t;  // 16-bit storage of f32 arithmetic
  return {unit_roundoff(compute), stored_narrower ? unit_roundoff(t) : 0.0, min_normal(compute), min_subnormal(t),
          stored_narrower ? min_normal(t) : 0.0, stored_narrower ? min_subnormal(t) / 2 : 0.0, kLibmExpUlps};
}

// arithmetic_of(p.dtype) with ABI v3's stored K and V formats' terms (docs/tolerance.md,
// "Stored K and V formats"): for K in a stored format, kv_logit = u_k + u, one rounding of each
// real key element to the dtype (u_k = kv_element_rounding, problem/kv_storage.h: 0 when the
// format's values are exact in the dtype) and one of the scale (or a block's d) applied to the
// dot product instead of the keys; for V, kv_value the same on the output. Where a real element
// may round into the dtype's subnormals (u_k or u_v > 0), `tiny` is at least half the dtype's
// smallest subnormal, an absolute error the flush terms then carry (|scale| sum_d |q_d| tiny on
// the logit, (n + 2) tiny on the output).
inline Arithmetic arithmetic_of(const Problem& p) {
  Arithmetic a = arithmetic_of(p.dtype);
  const double uk = kv_element_rounding(p, true), uv = kv_element_rounding(p, false);
  if (p.k_format != KvFormat::dtype) a.kv_logit = uk + a.u;
  if (p.v_format != KvFormat::dtype) a.kv_value = uv + a.u;
  if (uk > 0 || uv > 0) a.tiny = std::max(a.tiny, min_subnormal(p.dtype) / 2);
  return a;
}

// The oracle's own arithmetic in H, so its error is added to the bound too.
// (It neither flushes nor, inside the domain, underflows where it matters: tiny = 0.)
template <class H> Arithmetic oracle_arithmetic(double exp_ulps = kLibmExpUlps) {
  return {static_cast<double>(std::numeric_limits<H>::epsilon() / 2), 0.0, 0.0, 0.0, 0.0, 0.0, exp_ulps};
}

// Per-key logit error allowed in arithmetic `ar`, e_j in docs/tolerance.md:
//   dot product and scaling (gamma(D + 3) a_j, a_j = |scale| sum_d |q_d k_jd|),
//   the max subtraction (u |s_j - m|), exp, 16-bit storage of logits and
//   weights, and subnormal inputs flushed to zero (`ftz` is
//   |scale| sum_d (|q_d| + |k_jd|) times the arithmetic's smallest normal).
inline double logit_error(const Arithmetic& ar, double gamma_d3, double s, double x, double a, double ftz) {
  // x = s - m
  return (gamma_d3 + ar.kv_logit) * a + ar.u * std::abs(x) + ar.exp_ulps * ar.u +
         (ar.u16 > 0 ? ar.u16 * (std::abs(s) + std::abs(x) + 1) : 0.0) + ftz;
}

// The accumulation coefficient of sum_j p_j |v_jc| (docs/tolerance.md, sections 5
// and 6): numerator and denominator each 2n + 1 roundings (streaming rescales),
// one division, 16-bit output and weights, and the log-sum-exp normalisation
// (lse rounded once: up to a relative sqrt(u)). `m` is the row's largest logit.
inline double accumulation_coefficient(const Arithmetic& dt, double n, double m) {
  const double lse = std::min(dt.u * (std::abs(m) + std::log(n) + 2), std::sqrt(dt.u));
  return 2 * gamma(2 * n + 1, dt.u) + dt.u + 2 * dt.u16 + lse + dt.kv_value;
}
// The oracle divides by its sum: no lse.
inline double oracle_accumulation_coefficient(const Arithmetic& orc, double n) {
  return 2 * gamma(2 * n + 1, orc.u) + orc.u;
}


// The bound on the lse, log(exp(sink) + sum_j exp(z_j)) = m + log L over `terms`
// terms (docs/tolerance.md, "Version 2"). For each arithmetic: E = log sum_k
// p_k exp(e_k) bounds how far the logits' errors move it (the weights' shifts
// use the same E); the sum L of the terms, each rescaled at most once,
// gamma(2 terms + 1); the log within kLogUlps ulps of
// log L; m + log L, with a change of base to 2 and back, 2u (|m| + |lse|);
// lse is a float output, so an f64 implementation also rounds it to float
// (u_f32 |lse|); 16-bit weights below the smallest normal lose sub16 = sum_j
// d_j of L (normalised). The oracle's share with its own u, plus the exact
// value's rounding to double. An lse a float cannot hold (|lse| from half of
// float's largest value on: f64 logits beyond float's range) is not judged: +inf.
inline double lse_bound(const Arithmetic& dt, const Arithmetic& orc, double E_dt, double E_or, double terms, double m,
                        double log_total, double lse, double sub16) {
  if (!(std::abs(lse) < max_finite(DType::f32) / 2)) return kInf;
  const double u32 = unit_roundoff(DType::f32);
  const double to_float = dt.u < u32 ? u32 * std::abs(lse) : 0.0;
  const double b_dt = E_dt + gamma(2 * terms + 1, dt.u) + kLogUlps * dt.u * std::abs(log_total) +
                      2 * dt.u * (std::abs(m) + std::abs(lse)) + to_float + sub16;
  const double b_or = E_or + gamma(2 * terms + 1, orc.u) + kLogUlps * orc.u * std::abs(log_total) +
                      2 * orc.u * (std::abs(m) + std::abs(lse)) + std::numeric_limits<double>::epsilon() / 2 * std::abs(lse);
  return kBoundSafetyFactor * b_dt + b_or;
}

}  // namespace attncheck::oracle_detail
