// The gradient oracle's one pass (grad_kv_head.cpp), behind grad_oracle().
//
// Work is split by kv head: one kv head (b * kv_heads + kv head) and the
// query heads of its group, whose dq rows and whose sums into the kv head's dk
// and dv no other pass touches. H is the exact arithmetic: double for
// f32/f16/bf16 problems, long double for f64; the bound's terms are doubles.
#pragma once

#include <cstdint>

#include "oracle/grad_oracle.h"

namespace attncheck::grad_detail {

// Fills g.dq (the group's rows), g.dk and g.dv (the kv head's keys) and their
// bounds; g.forward must hold oracle(p) and every array be sized.
template <class H> void grad_kv_head(const Problem& p, int64_t kv_bh, GradOracleResult& g);

}  // namespace attncheck::grad_detail
