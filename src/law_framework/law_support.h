// Pieces several laws share: running a call (with the oracle beside it),
// tallying judged elements and violations, comparing two outputs that must
// agree, laws judged on the weights themselves (V = identity), and naming an
// element in messages.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "law_framework/law.h"
#include "oracle/oracle.h"
#include "problem/transforms.h"  // with_identity_values, with_identity_block

namespace attncheck {

// Runs impl on p. On success fills `out` and returns nullopt; otherwise the
// verdict the law must return (unsupported, fault, or fail on an error code).
std::optional<Verdict> run_for(Implementation& impl, const Problem& p, std::vector<double>& out);

// An implementation's output on a problem together with the oracle's answer.
struct CheckedRun {
  std::vector<double> out;  // [batch][heads][q_len][value_dim]
  OracleResult oracle;      // exact, bound, row_in_domain for the same problem
};

// Runs impl on p and the oracle beside it. nullopt when the output is usable
// (then `run` holds both); else the verdict the law must return.
std::optional<Verdict> run_with_oracle(Implementation& impl, const Problem& p, CheckedRun& run);

// Compares `run` with the oracle within the bound: pass, or a failure
// "<lead><n> element(s) <what>; worst [..]: got x, <expected> y: <u> ulp (<dtype>), <r>x the allowed
// difference b" (problem/number_text.h: x and y printed so that they differ when they do).
Verdict oracle_verdict(const Problem& p, const CheckedRun& run, const std::string& lead, const std::string& what,
                       const std::string& expected);

// Counts what a law judged and keeps the violation to report: the worst by
// `excess` (record_worst) or the first seen (record_first).
struct Tally {
  int64_t judged = 0, violations = 0;
  int64_t at = -1;     // flat index of the reported violation; -1 when none
  double excess = 0;   // how far the reported violation is outside what is allowed

  void judge(int64_t n = 1) { judged += n; }
  void record_first(int64_t k) {
    ++violations;
    if (at < 0) at = k;
  }
  // True when k became the reported violation.
  bool record_worst(int64_t k, double how_far) {
    ++violations;
    if (at >= 0 && !(how_far > excess)) return false;
    at = k;
    excess = how_far;
    return true;
  }
  // not_applicable(`nothing_judged`) when nothing was judged, pass when no
  // violation was seen; nullopt when the law must describe a failure.
  std::optional<Verdict> settled(const std::string& nothing_judged) const {
    if (judged == 0) return Verdict::not_applicable(nothing_judged);
    if (at < 0) return Verdict::pass();
    return std::nullopt;
  }
};

// A law judged on the attention weights themselves: the problem gets V = the
// kv_len x kv_len identity (value_dim = kv_len), so the output is the weight
// matrix P [batch][heads][q_len][kv_len]. The generator caps kv_len at
// kMaxIdentityKeys and larger replayed cases are not applicable. An
// implementation that refuses value_dim = kv_len has the same weights read in
// blocks through the value_dim the case was drawn with. `prepare`
// (optional) rewrites the generated problem first (e.g. adds a mask).
using WeightsCheck = std::function<Verdict(const Problem& p, const std::vector<double>& weights)>;
Law weights_law(std::string name, std::string statement, WeightsCheck check,
                std::function<Problem(const Problem&)> prepare = {});

// "[b=0][h=1][i=2][c=0]" for a flat index of an output [batch][heads][q_len][value_dim].
std::string output_element(const Problem& p, int64_t flat);

// Two outputs that must be equal up to each one's own allowed error:
// |a - b| <= tol_a + tol_b elementwise (inf tolerance: not judged). NaN in
// either where the tolerance is finite is a mismatch. Returns the message of
// the worst mismatch, or nullopt when they agree.
std::optional<std::string> mismatch(const Problem& p, const std::vector<double>& a, const std::vector<double>& tol_a,
                                    const std::vector<double>& b, const std::vector<double>& tol_b,
                                    const char* name_a, const char* name_b);


// Largest problems the weight-revealing laws build (V = identity has kv_len columns).
inline constexpr int64_t kMaxIdentityKeys = 128;

// "[b=0][h=1][i=2]" for query row i of head bh = b * heads + h.
std::string output_row(const Problem& p, int64_t bh, int64_t i);

// A short number for messages.
std::string num(double x);

}  // namespace attncheck
