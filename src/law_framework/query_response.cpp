#include "law_framework/query_response.h"

#include <cmath>

#include "law_framework/law_support.h"
#include "gen/gen_random.h"
#include "problem/transforms.h"

namespace attncheck {
namespace {

double row_norm(const Problem& p, const std::vector<double>& x, int64_t bh, int64_t i) {
  double s = 0;
  for (int64_t c = 0; c < p.shape.value_dim; ++c) s += x[p.out_at(bh, i, c)] * x[p.out_at(bh, i, c)];
  return std::sqrt(s);
}

double row_distance(const Problem& p, const std::vector<double>& a, const std::vector<double>& b, int64_t bh,
                    int64_t i) {
  double s = 0;
  for (int64_t c = 0; c < p.shape.value_dim; ++c) {
    const double d = a[p.out_at(bh, i, c)] - b[p.out_at(bh, i, c)];
    s += d * d;
  }
  return std::sqrt(s);
}

}  // namespace

Problem query_stepped(const Problem& p) {
  const Shape& s = p.shape;
  Problem moved = p;
  gen::Rng rng(problem_fingerprint(p));
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      std::vector<double> dir(s.head_dim);
      double dn = 0, qn = 0;
      for (int64_t d = 0; d < s.head_dim; ++d) {
        dir[d] = gen::gaussian(rng);
        dn += dir[d] * dir[d];
        qn += p.q[p.q_at(bh, i, d)] * p.q[p.q_at(bh, i, d)];
      }
      // A zero query row moves by a step of the size a unit-variance row would have.
      const double step = kQueryStep * (qn > 0 ? std::sqrt(qn) : std::sqrt(static_cast<double>(s.head_dim)));
      for (int64_t d = 0; d < s.head_dim; ++d)
        moved.q[p.q_at(bh, i, d)] = round_to(p.dtype, p.q[p.q_at(bh, i, d)] + step * dir[d] / std::sqrt(dn));
    }
  return moved;
}

std::optional<Verdict> measure_query_response(Implementation& impl, const Problem& p, std::vector<RowResponse>& rows) {
  const Problem moved = query_stepped(p);
  std::vector<double> a, b;
  if (auto bad = run_for(impl, p, a)) return bad;
  if (auto bad = run_for(impl, moved, b)) return bad;
  const OracleResult oa = oracle(p), ob = oracle(moved);
  rows.clear();
  const Shape& s = p.shape;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      RowResponse r;
      r.bh = bh;
      r.i = i;
      const double noise = row_norm(p, oa.bound, bh, i) + row_norm(p, ob.bound, bh, i);
      r.r_oracle = row_distance(p, oa.exact, ob.exact, bh, i);
      r.r_impl = row_distance(p, a, b, bh, i);
      r.exact_entropy = oa.entropy[bh * s.q_len + i];
      r.measurable = std::isfinite(noise) && r.r_oracle > kMeasurable * noise;  // else unmeasurable or out of domain
      rows.push_back(r);
    }
  return std::nullopt;
}

double weight_entropy(Implementation& impl, const Problem& p, int64_t bh, int64_t i) {
  if (p.shape.kv_len > kMaxIdentityKeys) return NAN;
  const Problem ip = with_identity_values(p);
  std::vector<double> w;
  if (run_for(impl, ip, w)) return NAN;
  double h = 0;
  for (int64_t j = 0; j < p.shape.kv_len; ++j) {
    const double x = w[ip.out_at(bh, i, j)];
    if (std::isnan(x)) return NAN;
    if (x > 0) h -= x * std::log(x);
  }
  return h;
}

}  // namespace attncheck
