// The high-precision oracle and the per-element error bound.
//
// The oracle evaluates attention in far more precision than the dtype under
// test (double for f32/f16/bf16, double-word arithmetic for f64, with x87 long
// double for rows the blocked paths cannot take), and for every output element derives how far a correct implementation
// in the problem's dtype may be from the exact value. The derivation is in
// docs/tolerance.md; nothing here is a hand-tuned tolerance.
#pragma once

#include <vector>

#include "problem/problem.h"

namespace attncheck {

struct OracleResult {
  std::vector<double> exact;        // [batch][heads][q_len][value_dim], the exact output rounded to double
  std::vector<double> bound;        // same shape: allowed |out - exact|; +inf where the row is outside
                                    // the representable domain or sees no key (not judged by it)
  std::vector<double> entropy;      // [batch][heads][q_len]: entropy of the attention weights in nats;
                                    // NaN for rows that see no key
  std::vector<uint8_t> row_in_domain;  // [batch][heads][q_len]: 1 when the row's exact computation
                                       // stays representable (see in_finite_domain)
  // [batch][heads][q_len], always computed (it costs one log per row), whether
  // or not the problem requests an lse: the exact log(exp(sink) + sum_j exp(z_j))
  // rounded to double, and the allowed |lse - exact|. A row that sees no key
  // has exact s (the sink, bound finite where the sink is representable) or
  // -inf without sinks (bound +inf: the ABI's convention, like its zeros);
  // padding rows and rows outside the domain have bound +inf (padding: exact 0).
  std::vector<double> lse_exact, lse_bound;
};

// The one documented safety factor applied to the first-order bound.
inline constexpr double kBoundSafetyFactor = 2.0;

OracleResult oracle(const Problem& p);

// For callers that judge the ABI's convention together with the arithmetic
// (fault diagnosis): rows that see no key get bound 0 around their exact zeros,
// and an lse bound of 0 around -inf where there is no sink. (Padding rows stay
// unjudged: a write there is the call encoding's to catch.)
void judge_empty_rows_as_zeros(OracleResult& o);

// The representable domain (docs/tolerance.md, "The representable domain"),
// for one query row of head bh, over every key of the head, hidden ones
// included. A row is outside only where exact attention, or a correct
// implementation in the arithmetic the ABI assumes for the dtype (f16/bf16
// computed and accumulated in f32, some intermediates stored in 16 bits), cannot
// stay finite: an input is not finite; a dot product's partial sums
// (sum_d |q_d k_d|, scaled or not) or a value column's sum over the keys of |v|
// reach half of the compute type's largest value; for 16-bit formats, a
// pre-scaled query element or a logit (scaled or not, with its rounding)
// reaches half of the 16-bit format's largest value. Inside it, a correct
// implementation's output is finite, and matches_oracle and
// finite_for_finite_inputs judge the row. A row that sees no key is outside
// too (its zeros are the ABI's convention, judged by fully_masked_rows_zero
// alone); its bound is +inf. ABI v2: padding rows are outside, padding keys
// are not read (they may hold NaN); the logits after the soft-cap, bias and
// ALiBi (every intermediate), the bias (finite or -inf) and the sink must stay
// representable too (docs/tolerance.md, "Version 2").
bool row_in_finite_domain(const Problem& p, int64_t bh, int64_t i);
bool in_finite_domain(const Problem& p);  // every row
// The same tests without "the row sees a key": whether a dense kernel's
// products for the row (formed, then masked) stay finite. The gradient
// oracle asks it of rows that see no key, whose NaN a kernel may multiply
// into every key's dk by zero weights.
bool row_representable(const Problem& p, int64_t bh, int64_t i);

// Result of comparing an output against the oracle.
struct Comparison {
  bool ok = true;
  double worst_ratio = 0;  // max over judged elements of |out - exact| / bound (inf if bound is 0 and they differ)
  int64_t worst_index = -1;  // flat index of the worst element
  int64_t violations = 0;
  int64_t judged = 0;  // elements with a finite bound; 0 when no row was inside the domain and saw a key
};
Comparison compare_to_oracle(const Problem& p, const OracleResult& o, const std::vector<double>& out);
// The same for an lse ([batch][heads][q_len], Outcome::lse decoded): rows
// with bound +inf are not judged; an exact -inf (an empty row judged by
// judge_empty_rows_as_zeros) must be met exactly. Indices are rows.
Comparison compare_lse_to_oracle(const Problem& p, const OracleResult& o, const std::vector<double>& lse);

}  // namespace attncheck
