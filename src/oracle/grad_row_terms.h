// The gradient bound's per-row, per-key error terms (docs/tolerance.md,
// "Gradients"): how far a correct backward's recomputed weights, dP = dO V^T,
// D, dS = P * (dP - D) and the soft-cap's derivative may be from the exact
// ones, in the problem's arithmetic. Pure functions of the row's exact
// quantities, shared by the oracle's kv-head pass (grad_kv_head.cpp); the
// products with K, Q and dO that follow are summed there.
#pragma once

#include <algorithm>
#include <cmath>

#include "oracle/bound_arithmetic.h"
#include "oracle/logit_chain.h"

namespace attncheck::grad_detail {

using oracle_detail::Arithmetic;
using oracle_detail::gamma;

// What the lse a correct backward normalises with may cost every weight of
// the row (relative, common to its keys), beyond each key's own logit error:
// whether it recomputes the lse, divides by a recomputed sum or takes the lse
// its forward stored (call->lse), the weights are p_j exp(eps_j - l) with
// |eps_j| <= e_j and l within
//   E                        the logits' errors moving the lse (log sum_k p_k exp(e_k))
//   + gamma(2 terms + 1)     the sum of the terms, each rescaled at most once
//   + u                      a division by that sum
//   + kLogUlps u |log L|     the log
//   + 2u (|m| + |lse|)       m + log L (with a change of base to 2 and back)
//   + u_f32 |lse|            for f64 when the call passes an lse: it is a float
// (sub16, the 16-bit weights below the smallest normal, is added by the caller).
inline double lse_error(const Arithmetic& dt, double E, double terms, double m, double log_total, double lse,
                        bool float_lse) {
  const double to_float = float_lse && dt.u < unit_roundoff(DType::f32) ? unit_roundoff(DType::f32) * std::abs(lse) : 0;
  return E + gamma(2 * terms + 1, dt.u) + dt.u + oracle_detail::kLogUlps * dt.u * std::abs(log_total) +
         2 * dt.u * (std::abs(m) + std::abs(lse)) + to_float;
}

// |p~_j - p_j| for a weight whose logit may be off by e_j and whose
// normalisation by l: p_j expm1(e_j + l) (exact for the perturbation, not
// first order), at most 1 (a weight stays in [0, 1]), plus the 16-bit
// allowance d16 (section 8 of the forward) and a weight flushed below tiny.
inline double weight_error(const Arithmetic& dt, double p, double e, double l, double d16) {
  return std::min(p * std::expm1(e + l), 1.0) + d16 + dt.tiny;
}

// |dP~_j - dP_j|, dP_j = sum_c dO_c v_jc over value_dim terms: the dot
// product in any order, gamma(Dv) sum_c |dO_c v_jc| (abs_dp), dP stored in 16
// bits, and flushes: each product below tiny, a subnormal input flushed
// (|dO_c v_jc| loses at most tiny |v_jc| or tiny |dO_c|).
// Every value stored in 16 bits is also off by up to half the format's
// smallest subnormal where it falls below the normal range (weight_step, 0
// for f32 and f64): the relative u16 says nothing there.
inline double dp_error(const Arithmetic& dt, double Dv, double dp, double abs_dp, double dout_abs_sum,
                       double v_abs_sum) {
  return gamma(Dv, dt.u) * abs_dp + dt.u16 * std::abs(dp) + dt.weight_step +
         dt.tiny * (Dv + dout_abs_sum + v_abs_sum);
}

// |D~ - D| for D = sum_c dO_c o_c = sum_j p_j dP_j. A correct backward forms it
// one of two ways, and the bound takes the larger:
//  - rowsum(dO * O) (FlashAttention) from its forward's out, off by at most
//    out_err_c (the forward's bound without its safety factor):
//    sum_c |dO_c| out_err_c + gamma(Dv) sum_c |dO_c o_c| (dout_out_abs), flushes;
//  - rowsum(P * dP) (softmax's backward, as autograd does it) from its own
//    weights and dP: sum_j (dp_j |dP_j| + p_j ddP_j) + gamma(n) sum_j p_j |dP_j|
//    (the caller sums these: via_p);
// and 16-bit storage of D.
inline double d_error(const Arithmetic& dt, double via_o, double via_p, double D) {
  return std::max(via_o, via_p) + dt.u16 * std::abs(D) + dt.weight_step;
}

// |dZ~_j - dZ_j| for dZ_j = p_j (dP_j - D), the logit's gradient. The
// cancellation in dP_j - D is where accuracy goes: the subtraction is exact
// enough (one rounding of its result), but it passes on the absolute errors
// of both operands, ddP_j + dD, however small dP_j - D is. So the term is
//   dp_j (|dP_j - D| + ddP_j + dD)    the weight's error times the computed difference
//   + p_j (ddP_j + dD)               the operands' errors
//   + 2 (u + u16) |dZ_j|             the subtraction and the product, each rounded and stored
//   (+ 2 weight_step: both stored below 16-bit normals)
// with |dP_j - D| (diff_abs) and |dZ_j| from the exact values.
inline double dz_error(const Arithmetic& dt, double p, double dp, double diff_abs, double ddp, double dD) {
  return dp * (diff_abs + ddp + dD) + p * (ddp + dD) + 2 * (dt.u + dt.u16) * p * diff_abs + 2 * dt.weight_step +
         dt.tiny;
}

// The soft-cap's derivative: dS_j = dZ_j * t_j with t_j = 1 - tanh^2(s_j / C)
// (in [0, 1]) at the score s_j. A correct backward evaluates tanh at its own
// score (off by score_err = gamma(D + 3) a_j + flushes) divided by C (two
// roundings, s stored in 16 bits), within kTanhUlps, and then 1 - th^2 (or
// (c / C)^2 from the stored capped logit): |t~ - t| <= 2 |th| dth + dth^2 + 3u
// + u16, at most 1. dS then errs by dZ's error times t + dt, |dZ| dt, and its
// own rounding and store. dth is tanh's largest slope over the arguments the
// computed one may take, x +- dx (the mean value theorem), times dx: sech^2
// at the end of that interval nearest 0, not at x. (At x alone it is first
// order only: with a logit error of 1e26 and C = 5e-29, x = 1e17 has slope 0,
// and the computed argument may be 0, whose slope is 1.)
inline double tanh_slope_near(double x_abs, double dx) {
  const double y = x_abs > dx ? x_abs - dx : 0.0;
  const double e = std::exp(-2 * y);  // sech^2(y) = 4 e / (1 + e)^2, no cancellation for large y
  return 4 * e / ((1 + e) * (1 + e)) * (1 + 0x1p-48);  // exp's and the quotient's roundings, above
}
struct SoftcapTerm {
  double t, dt;  // the derivative and its error
};
inline SoftcapTerm softcap_derivative_error(const Arithmetic& ar, double cap, double score, double score_err,
                                            double th, double t) {
  const double dx = (score_err + (2 * ar.u + ar.u16) * std::abs(score)) / cap;
  const double slope = std::max(t, tanh_slope_near(std::abs(score) / cap, dx));
  const double dth =
      slope * dx + (oracle_detail::kTanhUlps + 1) * ar.u * std::abs(th) + ar.u16 * std::abs(th) + ar.weight_step;
  return {t, std::min(2 * std::abs(th) * dth + dth * dth + 3 * ar.u + ar.u16 + ar.weight_step, 1.0)};
}
inline double ds_error(const Arithmetic& ar, double dz_err, double dz_abs, const SoftcapTerm& sc) {
  return dz_err * (sc.t + sc.dt) + dz_abs * sc.dt + (ar.u + ar.u16) * dz_abs * sc.t + ar.weight_step + ar.tiny;
}

// A factor that a correct backward multiplies by the scale before its product
// with K or Q (docs/tolerance.md, "Gradients", section 9): dS_j (autograd of
// scale * (Q K^T) hands the matmul scale * dS, and naive forms scale * dS_j
// first), k_jd or q_id (K or Q pre-scaled), by the whole scale or by its
// square root (PyTorch 2's math path scales q and k by sqrt(scale) each;
// libtorch 1.13's scales q by the whole scale). Where
// the scaled factor falls below the smallest normal it keeps only an absolute
// accuracy, or is flushed: it loses at most min(itself, tiny), and the rest of
// the scale (1 or sqrt|scale|) multiplies that loss. So the product loses at
// most min(|scale| hi, tiny max(1, sqrt|scale|)) times the other factor, and
// only where min(|scale|, sqrt|scale|) lo < tiny; [lo, hi] is the range of the
// factor's magnitude the bound allows (an input: its exact magnitude). The
// relative first-order terms miss this: the scaled factor's relative error is
// unbounded there (a scale of 1e-37 times a dS of 1e-3 is a subnormal float
// of 7 bits, which k_jd near 1e38 multiplies back to the size of dq).
//
// In long double (x87's exponent range): |scale| hi itself may underflow
// double (a scale of 1e-305 times a dS of 1e-90) where the other factor, up
// to 1e308, brings the loss back to the size of the gradient; callers
// multiply by that factor before they round to double.
struct ScaledFactorFlush {
  double asig, smin, cap, tiny;
  long double operator()(double lo, double hi) const {
    return static_cast<long double>(smin) * lo < tiny
               ? std::min(static_cast<long double>(asig) * hi, static_cast<long double>(cap))
               : 0.0L;
  }
};
inline ScaledFactorFlush scaled_factor_flush(const Arithmetic& dt, double asig) {
  const double root = std::sqrt(asig);
  return {asig, std::min(asig, root), dt.tiny * std::max(1.0, root), dt.tiny};
}

}  // namespace attncheck::grad_detail
