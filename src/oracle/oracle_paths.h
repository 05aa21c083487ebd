// The oracle's two ways of evaluating rows, behind oracle() (oracle.cpp).
//
// careful_row: one query row at a time, scalar, in H (double for f32/f16/bf16
// problems, long double for f64), with the weights' shifts evaluated exactly in
// log space: every row it is given, whatever its logits and errors.
// fast_head (fast_rows.cpp) and fast_head_f64 (fast_rows_f64.cpp): blocked and
// vectorised (fast_block.h): rows of a head in blocks, logits for a block
// against every key as a small matrix product, weights with a vectorised exp,
// the bound's sums as blocked products over V; the exact value in double
// (fast_head) or in double-word arithmetic (fast_head_f64). They handle the
// rows whose per-key logit errors are all at most kFastMaxLogitError (then the
// shifts have simple polynomial upper bounds) and hand the others to
// careful_row<double> and careful_row<long double>, so both give the same
// bound up to the second-order terms the safety factor already covers
// (docs/tolerance.md).
#pragma once

#include <cstdint>

#include "oracle/bound_arithmetic.h"
#include "oracle/oracle.h"

namespace attncheck::oracle_detail {

template <class H> void careful_row(const Problem& p, int64_t bh, int64_t i, OracleResult& o);

// Every row of head bh (b * heads + h), for problems whose compute dtype is
// f32 (the double path); its blocks of rows on compute_threads() threads.
void fast_head(const Problem& p, int64_t bh, OracleResult& o);
// The same for problems whose compute dtype is f64 (the double-word path).
void fast_head_f64(const Problem& p, int64_t bh, OracleResult& o);

inline constexpr double kFastMaxLogitError = 0.5;

// Every array of an OracleResult for this shape, zero-filled; the paths fill them row by row.
OracleResult sized_result(const Shape& sh);

// Row i of head bh is padding (i >= q_lens[b]): exact 0, bound +inf, not in
// the domain, entropy NaN, lse exact 0 and bound +inf. Never reads q.
void mark_padding_row(const Problem& p, int64_t bh, int64_t i, OracleResult& o);

// The lse of row i of head bh that exists and sees no key: s, the sink's
// logit, judged (the one term's errors) where it is representable; -inf
// without sinks, with bound +inf (a convention, like the row's zeros). `orc`:
// the path's own arithmetic.
void empty_row_lse(const Problem& p, int64_t bh, int64_t i, const Arithmetic& orc, OracleResult& o);

// The largest |sink| inside the representable domain: half of the compute
// type's largest value, and of the 16-bit format's (a logit it may store).
double sink_limit(const Problem& p);

}  // namespace attncheck::oracle_detail
