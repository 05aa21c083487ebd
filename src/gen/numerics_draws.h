// ABI v3's declared numerics in drawn problems (docs/abi/plugin-abi-v3.md,
// "Declared numerics"): for an implementation that declares numerics bits
// (GenOptions::numerics), a problem with K or V in a stored format keeps the
// spec's precondition on q (every element finite and below 2^15 in magnitude:
// an element that is not, a poisoned padding row's or a large one, becomes
// 0 or +-24576 = 1.5 * 2^14, exact in every dtype), where KV_PRECISION applies
// every partial sum sum_c |q_c k_jc| below 2^15 too (q scaled by a power of two;
// the formats' keys and values are far below 2^15 already), and holds in
// Problem::numerics the judged bits that apply to its call (problem/kv_numerics.h).
// Every stored-format problem of a declaring implementation keeps q so, not only
// those a bit applies to: a law may store the same values in another format
// (format_twins.h), where the bit then applies.
// Nothing changes for an implementation that declares none, so its seeds draw
// what they drew.
//
// Example usage (inside draw_late_features, after draw_kv_formats):
//   apply_declared_numerics(p, o.numerics);
#pragma once

#include <cstdint>

#include "problem/problem.h"

namespace attncheck::gen {

void apply_declared_numerics(Problem& p, uint32_t declared);

}  // namespace attncheck::gen
