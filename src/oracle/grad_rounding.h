// What rounding can do to a correct backward: the magnitudes the gradient laws
// bound their identities with, so that each law is judged on the
// implementation's own gradients without the gradient oracle.
//
// A correct backward computes, for each query row i and visible key j (exact
// weights P_ij, sinks in the denominator; dO = dout, O = its own forward out):
//   dP_ij = dO_i . V_j      D_i = dO_i . O_i      dS_ij = P_ij (dP_ij - D_i) f_ij
// (D_i as rowsum(dO * O), FlashAttention's way, or as rowsum(P * dP) = sum_j P_ij dP_ij,
// softmax's backward as autograd forms it: the same value in exact arithmetic)
//   dQ_i = scale sum_j dS_ij K_j    dK_j = scale sum_i dS_ij Q_i    dV_j = sum_i P_ij dO_i
// (f_ij = 1 - tanh^2(s_ij / c) with a soft-cap c, else 1; |f| <= 1). First
// order, each computed quantity carries:
//   - the arithmetic's rounding: gamma = n u_c (+ 6 u for 16-bit dtypes, whose
//     intermediates S, P, dP, D, dS and the pre-scaled q may be stored in 16
//     bits), n = head_dim + value_dim + kv_len + heads * q_len + 8, u_c the
//     compute type's unit (2^-24 for f32/f16/bf16, 2^-53 for f64);
//   - an error of the weights the backward uses: rho_vary_i (nats), the
//     computed logit's error (dot product, soft-cap, bias, ALiBi, 16-bit
//     storage of logits) plus exp's, different for every key; and rho_uniform_i
//     (nats), the error of the lse it may recompute P from (the forward's lse
//     bound, plus its rounding to float, which the ABI's lse is), the same
//     factor exp(rho) on every weight of the row; with a soft-cap, the error
//     of f_ij from the logit's (<= 2 err / c, absolute) joins rho_vary_i;
//   - the error of its forward O within the forward oracle's bound (C_i).
// Weights below the compute type's normal range may flush: every visible
// weight counts as P_ij + tau, tau = 4 min_normal(compute).
//
// So, with A_ij = |dO_i|.|V_j|, B_i = |dO_i|.|O_i|, C_i = |dO_i|.bound_i
// (dot products of absolute values), a_i = sum_j P'_ij A_ij (>= B_i: what
// rowsum(P * dP) sums) and D'_i = max(B_i, a_i), the deviation from the exact gradient is
//   |dK^_jd - dK_jd| <= F scale sum_i |Q_id| (P'_ij [(gamma + 2 rho_i)(A_ij + D'_i) + C_i] + floor)
//                       + u |dK^_jd| + min_subnormal(dtype)
// (dQ alike with |K_jd| summed over j; dV: F sum_i (P'_ij (gamma + rho_i) |dO_ic| + floor) + u |dV^| + ...), rho_i =
// expm1(rho_vary_i + rho_uniform_i) + gamma, F = kBoundSafetyFactor, u the
// dtype's unit (the gradient's own rounding), floor = n min_subnormal(compute)
// added to each dS and dV term (what underflow may take, before the products
// with K and Q, which may be huge) and min_subnormal(dtype). Laws that compare
// two calls with the same weights or that cancel part of the error take the
// pieces they need (GradErrorModel).
//
// The domain. Rows outside the forward oracle's domain, whose lse is beyond
// half float's largest value (the ABI's lse is float, and a backward may
// recompute P from it) or whose weights' error (rho_vary + rho_uniform)
// reaches a nat, or whose scores, dP or D (their partial sums, over
// every key of the head, hidden ones included) reach half the largest value
// of the type they are computed or stored in,
// are not judged, nor any dk, dv of the kv head they read (bound +inf), as the
// gradient oracle leaves them; nor an element whose terms' absolute sum
// reaches half the dtype's largest value (a correct backward may overflow
// there); nor where a factor the backward may multiply by the scale first
// (scale dS_ij, scale k_jd, scale q_id) may round to inf: the dq row or dk
// key of that dS_ij, the dq or dk column d of the kv head (inf times a zero
// factor is NaN where the exact gradient is 0); nor padding rows and keys.
// Such a scaled factor below the normal range keeps only an absolute
// accuracy, which the other factor multiplies back: what it may lose
// (ScaledFactorFlush, oracle/grad_row_terms.h) joins the bound. A NaN or
// infinite gradient anywhere else is judged (wrong).
#pragma once

#include <cstdint>
#include <vector>

#include "problem/outcome.h"
#include "problem/problem.h"

namespace attncheck {

// Per-row quantities of a backward problem, [batch][heads][q_len] unless said.
struct GradMagnitudes {
  std::vector<double> weights;   // exact P [batch][heads][q_len][kv_len], 0 where not visible
  std::vector<double> lse;       // exact log-sum-exp of the row (sink included); -inf for an empty row
  std::vector<uint8_t> judged;   // 1: the row exists, sees a key and is inside the forward's domain
  std::vector<uint8_t> seen;     // 1: the row exists and sees a key (judged or not)
  // 1: the row exists and its backward stays representable over every key of
  // the head, hidden ones included (dout finite; |q|.|k| and |dO|.|V| below
  // half the largest value of the compute or 16-bit type). A row outside puts
  // its dq and its kv head's dk and dv outside the domain (a dense kernel
  // multiplies the overflowed entries of hidden keys by zero weights: NaN).
  std::vector<uint8_t> in_domain;
  std::vector<double> rho_vary;     // nats: the part of the weights' error that differs from key to key
  std::vector<double> rho_uniform;  // nats: the part common to the row (the lse's)
  std::vector<double> b;  // B_i = sum_c |dO_ic| |O_ic|
  std::vector<double> c;  // C_i = sum_c |dO_ic| bound_ic (forward oracle bound)
  std::vector<double> a;  // sum_j P_ij A_ij, A_ij = sum_c |dO_ic| |V_jc|
  double gamma = 0;       // the arithmetic's accumulated relative rounding
  double tau = 0;         // absolute error of a weight near the underflow range
  double floor_unit = 0;  // n min_subnormal(compute)
};

// Computes the magnitudes of problem p (a backward problem) with `out`, the
// implementation's own forward output [batch][heads][q_len][value_dim].
GradMagnitudes grad_magnitudes(const Problem& p, const std::vector<double>& out);

// Which error sources a law's bound includes.
struct GradErrorModel {
  bool weights_error = true;   // rho: the weights the backward uses differ from the exact ones
  bool forward_error = true;   // C: its forward output differs from the exact one
};

// Allowed |g^ - g| per element of dq, dk, dv (q's, k's and v's shapes) for the
// gradients `o` of a correct backward, against the gradient exact for the
// error sources `model` leaves out. +inf where not judged (padding, rows
// outside the domain and the keys they see).
struct GradBounds {
  std::vector<double> dq, dk, dv;
};
GradBounds grad_rounding_bounds(const Problem& p, const GradMagnitudes& m, const Outcome& o,
                                GradErrorModel model = {});

// expm1(rho_vary + rho_uniform) + gamma: the relative error of row r's weights.
double weights_relative_error(const GradMagnitudes& m, int64_t row, bool uniform_part = true);

}  // namespace attncheck
