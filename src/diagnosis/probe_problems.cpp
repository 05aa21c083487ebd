#include "diagnosis/probe_problems.h"

#include <cmath>
#include <random>

#include "problem/transforms.h"

namespace attncheck {

Problem gaussian_probe(DType dtype, const Shape& shape, double scale, double logit_std, uint64_t seed) {
  Problem p = make_problem(dtype, shape, Causal::none, scale);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  std::uniform_real_distribution<double> u(0.5, 1.5);
  // scale * q.k is a sum of head_dim products of variance (c * scale)^2.
  const double c = logit_std / (p.effective_scale() * std::sqrt(static_cast<double>(shape.head_dim)));
  for (double& x : p.q) x = c * g(rng);
  for (double& x : p.k) x = g(rng);
  for (double& x : p.v) x = u(rng);
  round_tensors(p);
  return p;
}

Problem with_row_logit_sizes(const Problem& p, const std::vector<double>& target) {
  Problem r = p;
  const Shape& s = p.shape;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      long double big = 0;
      for (long double x : row_logits(p, bh, i))
        if (std::isfinite(x)) big = std::max(big, std::abs(x));
      if (big == 0) continue;
      const double f = target[i] / static_cast<double>(big);
      for (int64_t d = 0; d < s.head_dim; ++d) r.q[r.q_at(bh, i, d)] = round_to(p.dtype, p.q[p.q_at(bh, i, d)] * f);
    }
  return r;
}

double largest_logit(const Problem& p) {
  long double big = 0;
  for (int64_t bh = 0; bh < p.shape.batch * p.shape.heads; ++bh)
    for (int64_t i = 0; i < p.shape.q_len; ++i)
      for (long double x : row_logits(p, bh, i))
        if (std::isfinite(x)) big = std::max(big, std::abs(x));
  return static_cast<double>(big);
}

std::optional<ProbeRun> run_probe(Implementation& impl, const Problem& p, ProbeSkip* skip) {
  auto skipped = [skip](ProbeSkip why) -> std::optional<ProbeRun> {
    if (skip) *skip = why;
    return std::nullopt;
  };
  if (skip) *skip = ProbeSkip::none;
  if (!p.inconsistency().empty()) return skipped(ProbeSkip::declined);
  Outcome o = impl.run(p);
  if (is_process_fault(o.status)) return skipped(ProbeSkip::broke);
  if (o.status != CallStatus::ok || o.out.size() != static_cast<std::size_t>(p.shape.out_size()))
    return skipped(ProbeSkip::declined);
  ProbeRun r;
  r.out = std::move(o.out);
  r.right = oracle(p);
  judge_empty_rows_as_zeros(r.right);
  r.correct = compare_to_oracle(p, r.right, r.out).ok;
  for (double b : r.right.bound) r.judged += std::isfinite(b) ? 1 : 0;
  return r;
}

}  // namespace attncheck
