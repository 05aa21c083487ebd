// The typical-error model (docs/tolerance.md, "The typical error"): the
// standard deviation of the error a careful kernel of the problem's dtype
// makes on each output element, when rounding errors behave as independent,
// mean-zero random variables (Higham and Mary's probabilistic analysis), so
// that a sum of n terms errs like sqrt(n) u rather than the bound's n u.
// The hard bound (oracle.h) says what no correct kernel exceeds; this model
// says what a careful one typically makes, and grades an implementation
// against it (accuracy_grade.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "oracle/accuracy_grade.h"
#include "oracle/oracle.h"
#include "problem/problem.h"

namespace attncheck {

// Why the model's assumptions do not hold for this problem, in words; empty
// when they do: an f32, f16 or bf16 forward problem (the f64 oracle's exact
// value is stored in double, as precise as the output), without a soft-cap,
// bias, ALiBi or sinks (their own arithmetic is not modelled), whose q, k and
// v each look like Gaussian draws: at least 16 elements, all finite, mean
// within one standard deviation of zero, none beyond 6 root-mean-squares,
// at most a quarter of them with 4 significant bits or fewer (small
// integers, zeros, powers of two: sums of those are exact, not random).
std::string typical_error_model_excludes(const Problem& p);

// The spacing of the dtype's numbers at x: 2u 2^floor(log2 |x|), at least the
// smallest subnormal (one ulp of the output).
double ulp_at(double x, DType t);

// The typical error (a standard deviation) of each output element,
// [batch][heads][q_len][value_dim]; NaN where it is not modelled: rows not
// graded (the oracle does not judge them, they see fewer than 2 keys or one
// key dominates them (1 / sum_j p_j^2 < 2), or the
// row sample skips them to keep the cost at about 2^23 multiply-adds per
// problem). All NaN when typical_error_model_excludes(p) is not empty.
// stored16 (f16, bf16): the careful kernel may store its logits, their
// differences to the max, and its weights in the 16-bit format, as the bound
// allows (docs/tolerance.md, section 6; eager PyTorch on 16-bit tensors,
// FlashAttention-2's P in 16 bits): the standard the accuracy law judges
// 16-bit formats against.
std::vector<double> typical_error(const Problem& p, const OracleResult& o, bool stored16 = false);

// The case's grade: every element with a typical error, compared with the
// oracle's exact value; nullopt when the model does not hold or grades no element.
std::optional<AccuracyCase> grade_case(const Problem& p, const OracleResult& o, const std::vector<double>& out);

}  // namespace attncheck
