// What ABI v3's declared numerics add to a row's logit error (docs/tolerance.md,
// "Declared numerics"), shared by the careful path (careful_row.cpp) and the
// blocked path (fast_block.h), which add it to every key's e_j of the row.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "problem/kv_numerics.h"
#include "problem/problem.h"

namespace attncheck::oracle_detail {

// Q_AS_Q8_0 (p.numerics): |scale| max_j sum_c e_c |k_jc| over the keys j that
// row i of head bh sees (seen(j)), e_c = q8_0_query_allowance of the largest
// |q_c| of c's block of 32 channels of the row (q [head_dim] as stored, k the
// real keys [kv_len][head_dim] of the row's kv head). Each q_c may move by up
// to e_c, so logit j by at most |scale| sum_c e_c |k_jc|; the spec charges the
// row's largest on every key. 0 without the bit.
template <class Seen>
double numerics_logit_allowance(const Problem& p, int64_t bh, int64_t i, Seen&& seen) {
  if (!(p.numerics & kNumericsQAsQ8_0)) return 0.0;
  const int64_t D = p.shape.head_dim, kv = p.kv_of(bh);
  std::vector<double> e(static_cast<std::size_t>(D));
  for (int64_t c0 = 0; c0 < D; c0 += kQ8_0QueryBlock) {
    const int64_t c1 = std::min(D, c0 + kQ8_0QueryBlock);
    double a = 0;
    for (int64_t c = c0; c < c1; ++c) a = std::max(a, std::abs(p.q[p.q_at(bh, i, c)]));
    for (int64_t c = c0; c < c1; ++c) e[static_cast<std::size_t>(c)] = q8_0_query_allowance(a);
  }
  double worst = 0;
  for (int64_t j = 0; j < p.shape.kv_len; ++j) {
    if (!seen(j)) continue;
    double sum = 0;
    for (int64_t c = 0; c < D; ++c) sum += e[static_cast<std::size_t>(c)] * std::abs(p.k[p.k_at(kv, j, c)]);
    worst = std::max(worst, sum);
  }
  // The sum in double: within a relative 2^-50 or so of the exact one, which
  // (1 + 2^-40) covers.
  return std::abs(p.effective_scale()) * worst * (1 + 0x1p-40);
}

}  // namespace attncheck::oracle_detail
