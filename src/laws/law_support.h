// Pieces several laws share: running a call, the oracle's tolerance for an
// output, comparing two outputs that must agree, and naming an element.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "laws/law.h"
#include "oracle/oracle.h"

namespace attncheck {

// Runs impl on p. On success fills `out` and returns nullopt; otherwise the
// verdict the law must return (unsupported, fault, or fail on an error code).
std::optional<Verdict> run_for(Implementation& impl, const Problem& p, std::vector<double>& out);

// "[b=0][h=1][i=2][c=0]" for a flat index of an output [batch][heads][q_len][value_dim].
std::string output_element(const Problem& p, int64_t flat);

// Two outputs that must be equal up to each one's own allowed error:
// |a - b| <= tol_a + tol_b elementwise (inf tolerance: not judged). NaN in
// either where the tolerance is finite is a mismatch. Returns the message of
// the worst mismatch, or nullopt when they agree.
std::optional<std::string> mismatch(const Problem& p, const std::vector<double>& a, const std::vector<double>& tol_a,
                                    const std::vector<double>& b, const std::vector<double>& tol_b,
                                    const char* name_a, const char* name_b);

// The problem with V replaced by the kv_len x kv_len identity in every head
// (value_dim = kv_len): the output is then the attention weights P [b][h][q_len][kv_len].
Problem with_identity_values(const Problem& p);

// Largest problems the weight-revealing laws build (V = identity has kv_len columns).
inline constexpr int64_t kMaxIdentityKeys = 128;

// "[b=0][h=1][i=2]" for query row i of head bh = b * heads + h.
std::string output_row(const Problem& p, int64_t bh, int64_t i);

// A short number for messages.
std::string num(double x);

}  // namespace attncheck
