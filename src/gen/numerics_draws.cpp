#include "gen/numerics_draws.h"

#include <cmath>

#include "problem/kv_numerics.h"

namespace attncheck::gen {

void apply_declared_numerics(Problem& p, uint32_t declared) {
  if (declared == 0 || !p.kv_formatted()) return;
  // 1.5 * 2^14: below 2^15 and exact in f16, bf16 and f32.
  constexpr double kLargeQuery = 24576.0;
  for (double& x : p.q)
    if (!(std::abs(x) < kNumericsQueryLimit)) x = std::isnan(x) ? 0.0 : std::copysign(kLargeQuery, x);
  p.numerics = numerics_that_apply(p, declared) & kJudgedNumerics;
}

}  // namespace attncheck::gen
