// The founding law's measurement (query_sensitivity.cpp), one definition for
// every user: the law, which judges its ratio, and `attncheck sensitivity`
// (cli/sensitivity_command.h), which draws it against head_dim.
//
// For each query row of a problem, q is moved by a fixed pseudo-random
// direction of norm kQueryStep * ||q|| (drawn from the problem's contents, so
// a case replays identically), and
//   r_impl   = || out(q + delta) - out(q) ||      over the row's value_dim outputs
//   r_oracle = || exact(q + delta) - exact(q) ||
// r_impl / r_oracle is the row's query sensitivity: 1 for exact attention.
// A row is measurable when r_oracle is at least kMeasurable times the
// oracle's bound on both calls (then a correct implementation's ratio lies
// within [0.9, 1.1]).
//
// Example usage:
//   std::vector<RowResponse> rows;
//   if (auto bad = measure_query_response(impl, p, rows)) return *bad;  // the call failed
//   for (const RowResponse& r : rows) if (r.measurable) use(r.ratio());
#pragma once

#include <optional>
#include <vector>

#include "law_framework/law.h"
#include "oracle/oracle.h"

namespace attncheck {

inline constexpr double kQueryStep = 0.05;
inline constexpr double kMeasurable = 10;

struct RowResponse {
  int64_t bh = 0, i = 0;        // the row: batch * heads + head, query index
  double r_impl = 0, r_oracle = 0;
  double exact_entropy = 0;     // of the exact attention weights of the row (nats)
  bool measurable = false;      // r_oracle clears the oracle's noise (and is finite)
  double ratio() const { return r_impl / r_oracle; }
};

// p with every query row moved by its step (the same every time for the same p).
Problem query_stepped(const Problem& p);

// Runs impl on p and on query_stepped(p), the oracle on both, and fills one
// RowResponse per (bh, i) row in order. nullopt when both calls were usable;
// else the verdict a law returns for the unusable call.
std::optional<Verdict> measure_query_response(Implementation& impl, const Problem& p, std::vector<RowResponse>& rows);

// Entropy (nats) of the implementation's attention weights of row (bh, i),
// read with V = identity; NaN when they cannot be read.
double weight_entropy(Implementation& impl, const Problem& p, int64_t bh, int64_t i);

}  // namespace attncheck
