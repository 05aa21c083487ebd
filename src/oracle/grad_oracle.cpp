// grad_oracle(): the forward oracle, then one pass per kv head (grad_paths.h)
// on every core.
#include "oracle/grad_oracle.h"

#include <stdexcept>

#include "oracle/grad_paths.h"
#include "parallel/parallel_for.h"

namespace attncheck {

GradOracleResult grad_oracle(const Problem& p) {
  if (!p.is_backward()) throw std::invalid_argument("grad_oracle: not a backward problem (no dout)");
  const Shape& sh = p.shape;
  GradOracleResult g;
  g.forward = oracle(p);
  g.dq.assign(sh.q_size(), 0.0);
  g.dk.assign(sh.k_size(), 0.0);
  g.dv.assign(sh.v_size(), 0.0);
  g.dq_bound.assign(sh.q_size(), 0.0);
  g.dk_bound.assign(sh.k_size(), 0.0);
  g.dv_bound.assign(sh.v_size(), 0.0);
  const bool f64 = compute_dtype(p.dtype) == DType::f64;
  const auto pass = f64 ? grad_detail::grad_kv_head<long double> : grad_detail::grad_kv_head<double>;
  const int64_t kv_heads = sh.batch * sh.kv_head_count();
  // Per kv head: the group's rows against its keys, about 12 products of
  // length head_dim or value_dim per (row, key), long double ones at several times the cost.
  const double flop = (f64 ? 60.0 : 24.0) * static_cast<double>(sh.heads / sh.kv_head_count()) *
                      static_cast<double>(sh.q_len * sh.kv_len * (sh.head_dim + sh.value_dim));
  parallel_for(kv_heads, flop, [&](int64_t begin, int64_t end) {
    for (int64_t kv = begin; kv < end; ++kv) pass(p, kv, g);
  });
  return g;
}

}  // namespace attncheck
