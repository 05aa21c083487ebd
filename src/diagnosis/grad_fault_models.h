// Diagnosis of backward faults: the implementation's gradients on a failing
// backward case matched against gradients with one known fault (the zoo's
// backward members), computed in double from the exact weights and the
// implementation's own forward output.
//
// Example usage (diagnose() does this first for a backward case):
//   const std::string d = diagnose_gradients(impl, failing);
//   // "behaves like: dS without the rowsum term (dS = P * dP)"
#pragma once

#include <string>

#include "impls/implementation.h"
#include "problem/problem.h"

namespace attncheck {

// Which fault a gradient prediction carries (none: the correct backward).
struct GradFault {
  bool no_rowsum = false;                  // dS = P * dP
  bool dq_unscaled = false;                // dQ = dS K, without the scale
  bool gqa_first_head = false;             // a group's dK/dV from its first query head only
  bool dv_unnormalised = false;            // dV from exp(z - max), without 1/sum
  bool nan_empty_rows = false;             // dq NaN for rows that see no key
  bool softcap_derivative_dropped = false; // dS without 1 - tanh^2(s / c)
};

// The gradients of backward problem p with that fault, given the forward
// output `out` [batch][heads][q_len][value_dim] (D = rowsum(dout * out)):
// dq [batch][heads][q_len][head_dim], dk, dv [batch][kv_heads][kv_len][..];
// padding rows and keys NaN.
struct PredictedGradients {
  std::vector<double> dq, dk, dv;
};
PredictedGradients faulty_gradients(const Problem& p, const std::vector<double>& out, const GradFault& fault);

// Runs impl on the backward problem `failing` (twice, for faults that show
// between calls; then on the case in f64 and with empty rows and unseen keys)
// and names the backward fault its gradients match within a correct
// backward's rounding bound (oracle/grad_rounding.h) where the correct
// gradients do not: "behaves like: ...". "" when none matches, when the case
// is not a backward problem, or when its gradients are correct on all three.
std::string diagnose_gradients(Implementation& impl, const Problem& failing);

}  // namespace attncheck
