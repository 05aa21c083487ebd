// The problems the measurements run an implementation on (probes), and the
// one way they run it: beside the oracle, with rows that see no key judged as
// the ABI's zeros (a fault to measure too).
//
// Probes are built from fixed seeds, so a diagnosis replays exactly. Values
// are rounded to the probe's dtype, so every probe is a legal call.
//
// Example usage (the weights of a 4 x 16 Gaussian problem):
//   Problem p = with_identity_values(gaussian_probe(DType::f32, {1, 1, 4, 16, 64, 4}, NAN, 1.5, 3));
//   if (const std::optional<ProbeRun> r = run_probe(impl, p); r && !r->correct) ...  // r->out is P [4][16]
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "impls/implementation.h"
#include "oracle/oracle.h"
#include "problem/problem.h"

namespace attncheck {

// q [b][h][q_len][head_dim] and k [b][h][kv_len][head_dim] drawn N(0, 1) from
// `seed`, q then multiplied so that the exact logits scale * q.k have standard
// deviation about `logit_std`; v [b][h][kv_len][value_dim] uniform in
// [0.5, 1.5], so every output is near 1 and a relative error is well defined.
// No causal rule, no mask.
Problem gaussian_probe(DType dtype, const Shape& shape, double scale, double logit_std, uint64_t seed);

// Query row i of every head multiplied so that its largest exact |logit| is
// about target[i] (target: [q_len]); rows whose logits are all 0 are left alone.
Problem with_row_logit_sizes(const Problem& p, const std::vector<double>& target);

// The largest exact |logit| over every visible (row, key) of p; 0 when none.
double largest_logit(const Problem& p);

// What one probe came to.
struct ProbeRun {
  std::vector<double> out;  // the implementation's output [b][h][q_len][value_dim]
  OracleResult right;       // the oracle's, empty rows judged as zeros
  bool correct = true;      // every judged element within the bound
  int64_t judged = 0;       // elements with a finite bound
};

// Why a probe gave no output: the implementation declined the problem
// (unsupported, an error code: skip that measurement) or failed as a program
// (crash, hang, bad write: stop measuring, every further call may cost a
// timeout).
enum class ProbeSkip { none, declined, broke };

// Runs impl on p beside the oracle. nullopt when the call gave no usable
// output; `skip` (optional) then says why.
std::optional<ProbeRun> run_probe(Implementation& impl, const Problem& p, ProbeSkip* skip = nullptr);

}  // namespace attncheck
