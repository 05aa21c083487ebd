// The fault models diagnosis matches against: each predicts, in high
// precision, what attention with one known fault outputs on a problem, and how
// far a faithful implementation of that fault in the problem's dtype may be
// from the prediction. Where a problem expresses the fault (scale 1 is the
// problem with scale = 1; a causal rule off by one is a mask) the prediction
// and its bound are the oracle's of that problem.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "problem/problem.h"

namespace attncheck {

struct Prediction {
  std::vector<double> out;    // [batch][heads][q_len][value_dim]; NaN where the fault gives NaN
  std::vector<double> bound;  // same shape: allowed |impl - out|; +inf: not judged (a wrong
                              // output there rules the model out); NaN: free (the fault's
                              // computation leaves the representable domain, any output fits)
  // [batch][heads][q_len]: the lse the fault gives and its bound, read like
  // out's (judged only where the problem requests an lse). Empty: the model
  // says nothing about the lse, so a wrong lse rules it out.
  std::vector<double> lse, lse_bound;
};

struct FaultModel {
  std::string_view description;  // completes "behaves like: ..."
  // nullopt when the fault cannot show on this problem (e.g. no mask to ignore).
  std::optional<Prediction> (*predict)(const Problem& p);
};

// Most common faults first: the first model that matches is the diagnosis.
// The ABI v2 faults (v2_fault_models) follow, and the precision faults
// (accumulation_fault_models) come last: their predictions lie within a few
// roundings of correct attention, so any fault a model names more exactly
// is named first.
const std::vector<FaultModel>& fault_models();

// The faults of ABI v2 features (fault_models_v2.cpp); each applies only to
// problems that use its feature.
const std::vector<FaultModel>& v2_fault_models();

// Sums kept in a narrower type than the dtype's (accumulation_fault_models.cpp):
// "accumulates in 16-bit", the softmax sum and the weighted sum of V as f16
// running sums.
const std::vector<FaultModel>& accumulation_fault_models();

}  // namespace attncheck
