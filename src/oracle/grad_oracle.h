// The gradient oracle: exact dq, dk, dv of a backward problem and the per-element
// bound a correct implementation in the problem's dtype stays within.
//
// A backward problem (Problem::is_backward) asks for the gradients of
// sum(out * dout) with respect to q, k and v. The oracle evaluates them in far
// more precision than the dtype (double for f32/f16/bf16 problems, x87 long
// double for f64), and derives for every element how far a correct backward
// may be from the exact value: a first-order forward error analysis of the
// backward's arithmetic (recomputed weights, dP = dO V^T, D = rowsum(dO * O) or
// rowsum(P * dP), dS = P * (dP - D) through the soft-cap's derivative, the
// products with K and Q, the sums over a GQA group), derived in
// docs/tolerance.md ("Gradients"). The only free constant is the forward's
// kBoundSafetyFactor.
//
// Example usage:
//   const GradOracleResult g = grad_oracle(p);               // p.is_backward()
//   const GradComparison c = compare_grads_to_oracle(p, g, outcome);
//   if (!c.ok()) fail(c.message());
#pragma once

#include <string>
#include <vector>

#include "oracle/oracle.h"
#include "problem/outcome.h"
#include "problem/problem.h"

namespace attncheck {

struct GradOracleResult {
  // The exact gradients rounded to double, in q's, k's and v's shapes:
  //   dq [batch][heads][q_len][head_dim], dk [batch][kv_heads][kv_len][head_dim],
  //   dv [batch][kv_heads][kv_len][value_dim].
  // Exact zeros for padding rows and keys, for rows that see no key (dq) and
  // keys no row sees (dk, dv); NaN where the oracle did not evaluate them (dq
  // of a row outside the domain, dk/dv of a kv head such a row reads).
  std::vector<double> dq, dk, dv;
  // Same shapes: the allowed |got - exact|. +inf (not judged by it) for
  // padding rows and keys; rows outside the representable domain (the
  // forward's row_in_finite_domain, or dout and dP = dO V^T beyond it: see
  // docs/tolerance.md) and every dk/dv element of the kv head such a row
  // reads (a dense kernel forms 0 * NaN for every key); dq of rows that see no
  // key and dk/dv of keys no row sees (exact zeros, judged by a law, not by
  // the bound); elements whose exact value overflows the dtype or whose
  // partial sums may overflow the compute type.
  std::vector<double> dq_bound, dk_bound, dv_bound;
  // The forward oracle of the same problem (out, lse, the domain), which the
  // bound uses for out's error in D = rowsum(dO * O).
  OracleResult forward;
};

// Requires p.is_backward().
GradOracleResult grad_oracle(const Problem& p);

// The three gradients of an Outcome against the oracle, each judged as
// compare_to_oracle judges out (an inf where the allowed interval reaches the
// dtype's overflow threshold counts as its largest value).
struct GradComparison {
  Comparison dq, dk, dv;
  // The worst element over the three tensors, for message(): "" when none judged.
  std::string worst_element;  // "dk[b=0][kv_head=1][j=3][d=2]"
  double worst_got = 0, worst_exact = 0, worst_bound = 0, worst_ratio = 0;
  DType dtype = DType::f64;  // the gradients' (the problem's): message() counts ulps in it
  bool ok() const { return dq.ok && dk.ok && dv.ok; }
  int64_t judged() const { return dq.judged + dk.judged + dv.judged; }
  int64_t violations() const { return dq.violations + dk.violations + dv.violations; }
  // "" when ok; else how many elements of each tensor are over and the worst:
  // "dk[b=0][kv_head=1][j=3][d=2] = 0.5 but exact 0.49: 1.4e+05 ulp (f32) (bound 1e-07, 12x over)",
  // the two values with the digits that tell them apart (problem/number_text.h).
  std::string message() const;
};

GradComparison compare_grads_to_oracle(const Problem& p, const GradOracleResult& g, const Outcome& got);

// "dq[b=0][h=1][i=2][d=0]", "dk[b=0][kv_head=1][j=3][d=2]", "dv[b=0][kv_head=1][j=3][c=2]"
// for a flat index of that tensor.
std::string dq_element(const Problem& p, int64_t flat);
std::string dk_element(const Problem& p, int64_t flat);
std::string dv_element(const Problem& p, int64_t flat);

}  // namespace attncheck
