// The measurements measure() combines, one file each, and what they share:
// a call budget and the way numbers are written. Each returns its findings
// as phrases ("weights sum to 0.73 (extra mass in the denominator)"), empty
// when it saw nothing informative or could not run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "diagnosis/probe_problems.h"
#include "impls/implementation.h"
#include "problem/problem.h"

namespace attncheck {

// Bounds what measuring costs a plugin: a number of calls, and none after a
// crash or a hang (each further call may cost a timeout).
class ProbeBudget {
 public:
  explicit ProbeBudget(int calls) : left_(calls) {}
  // run_probe within the budget; nullopt when declined, broken or spent.
  std::optional<ProbeRun> run(Implementation& impl, const Problem& p);
  int used() const { return used_; }

 private:
  int left_, used_ = 0;
  bool broke_ = false;
};

// Effective scale (slope of log p_j - log p_k against s_j - s_k) and weight
// mass (sum_j p_j) from the weights of a 4 x 16 Gaussian problem. `found`
// is set when either was reported (the errors the other probes see are then
// already explained).
std::vector<std::string> measure_weights(Implementation& impl, const Problem& failing, ProbeBudget& budget,
                                         bool& found);

// Effective precision and growth of the error over kv_len 8, 64, 512, 2048,
// and "wrong only from kv_len N" when only the longer problems fail.
// `weights_explained`: skip the precision claim (a scale or mass fault is
// the cause of the error).
std::vector<std::string> measure_precision(Implementation& impl, const Problem& failing, ProbeBudget& budget,
                                           bool weights_explained);

// "wrong only when a logit exceeds X": rows whose largest logit grows from
// 0.5 to 2000, then a finer scan around the edge.
std::vector<std::string> measure_threshold(Implementation& impl, const Problem& failing, ProbeBudget& budget);

// The failing case varied in dtype, head_dim, causal rule and mask: the axes
// where the failure is present and absent.
std::vector<std::string> measure_axes(Implementation& impl, const Problem& failing, ProbeBudget& budget);

// x with `digits` significant digits, trailing zeros dropped, no exponent for
// x >= 1: 0.693, 30, 1400.
std::string significant(double x, int digits = 3);

}  // namespace attncheck
