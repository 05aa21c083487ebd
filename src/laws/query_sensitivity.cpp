// query_sensitivity (the founding law, founding-case.md): the output responds
// to a small change of the query as much as exact attention does, within a
// factor of two. For each query row, q is moved by a fixed pseudo-random
// direction delta of norm kRelativeStep * ||q|| (drawn from the problem's
// contents, so a case replays identically), and
//   R_impl   = || out(q + delta) - out(q) ||      over the row's value_dim outputs
//   R_oracle = || exact(q + delta) - exact(q) ||
// must satisfy 1/2 <= R_impl / R_oracle <= 2. A correct implementation is off
// from each exact output by at most the oracle's bound, so |R_impl - R_oracle|
// <= ||bound(q)|| + ||bound(q + delta)||; rows are judged only when R_oracle is
// at least kMeasurable times that, which keeps a correct ratio within
// [0.9, 1.1]. Judged for head_dim >= 16 (below that a missing 1/sqrt(d) hardly
// matters, and shrinking would lose the story); tailored to the founding regime:
// unit Gaussians, no mask, no causal rule, default scale, head_dim 16..512.
//
// Catches: logits never scaled by 1/sqrt(d) (a saturated softmax ignores the
// query: ratio << 1/2, or >> 2 where the winner flips), scale 1/d (weights
// over-smoothed: ratio ~ 1/sqrt(d)), weights not from a softmax (the founding
// "fix" multiplies V by q: ratio far off), a query read from the wrong row or
// head. Cannot catch: faults that leave the logits' dependence on q intact
// (mask, causal, K/V handling faults that keep the response size), or any
// fault in rows where the exact response is below the dtype's noise.
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "laws/law_support.h"
#include "problem/gen_random.h"
#include "problem/transforms.h"

namespace attncheck {

namespace {

constexpr double kRelativeStep = 0.05;
constexpr double kMeasurable = 10;
// Below this head_dim a missing 1/sqrt(d) barely changes the logits' spread;
// keeping the law to the regime also keeps shrunk counterexamples in it.
constexpr int64_t kMinHeadDim = 16;

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

// Entropy (nats) of the implementation's attention weights of row (bh, i),
// read with V = identity; NaN when they cannot be read.
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

}  // namespace

Law law_query_sensitivity() {
  Law law;
  law.name = "query_sensitivity";
  law.statement = "a small change of the query moves the output as much as in exact attention, within a factor of 2";
  law.cheap = false;
  law.tailor = [](GenOptions& g) {
    g.families = kGaussian;
    g.mask = false;
    g.causal = false;
    g.explicit_scale = false;
    g.min_head_dim = kMinHeadDim;
    g.max_head_dim = 512;
    g.min_q_len = 1;
    g.max_q_len = 4;
    g.min_kv_len = 2;
    g.max_kv_len = 64;
  };
  law.check = [](Implementation& impl, const Problem& p) {
    const Shape& s = p.shape;
    if (s.head_dim < kMinHeadDim)
      return Verdict::not_applicable("head_dim " + std::to_string(s.head_dim) + " is below the law's regime (>= 16)");
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
        const double step = kRelativeStep * (qn > 0 ? std::sqrt(qn) : std::sqrt(static_cast<double>(s.head_dim)));
        for (int64_t d = 0; d < s.head_dim; ++d)
          moved.q[p.q_at(bh, i, d)] = round_to(p.dtype, p.q[p.q_at(bh, i, d)] + step * dir[d] / std::sqrt(dn));
      }

    std::vector<double> a, b;
    if (auto bad = run_for(impl, p, a)) return *bad;
    if (auto bad = run_for(impl, moved, b)) return *bad;
    const OracleResult oa = oracle(p), ob = oracle(moved);

    int64_t measured = 0, worst_bh = -1, worst_i = -1;
    double worst_ratio = 1, worst_log = -1, worst_r_impl = 0, worst_r_oracle = 0;
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = 0; i < s.q_len; ++i) {
        const double noise = row_norm(p, oa.bound, bh, i) + row_norm(p, ob.bound, bh, i);
        const double r_oracle = row_distance(p, oa.exact, ob.exact, bh, i);
        if (!std::isfinite(noise) || !(r_oracle > kMeasurable * noise)) continue;  // unmeasurable or out of domain
        ++measured;
        const double r_impl = row_distance(p, a, b, bh, i);
        const double ratio = r_impl / r_oracle;
        const double off = std::isnan(ratio) ? INFINITY : std::abs(std::log(ratio));
        if (off > worst_log) {
          worst_log = off; worst_ratio = ratio; worst_bh = bh; worst_i = i;
          worst_r_impl = r_impl; worst_r_oracle = r_oracle;
        }
      }
    if (measured == 0) return Verdict::not_applicable("no row's exact response rises above the dtype's noise");
    if (worst_ratio >= 0.5 && worst_ratio <= 2) return Verdict::pass();

    const double h_impl = weight_entropy(impl, p, worst_bh, worst_i);
    const double h_exact = oa.entropy[worst_bh * s.q_len + worst_i];
    std::ostringstream m;
    m << "row " << output_row(p, worst_bh, worst_i) << " responds to a query step of " << kRelativeStep
      << "*|q| by " << num(worst_r_impl) << " where exact attention moves by " << num(worst_r_oracle)
      << ": ratio " << num(worst_ratio) << " (allowed 0.5..2) at head_dim=" << s.head_dim
      << "; entropy of its attention weights " << (std::isnan(h_impl) ? std::string("unreadable") : num(h_impl))
      << " nats vs exact " << num(h_exact) << " (uniform over " << s.kv_len << " keys: "
      << num(std::log(static_cast<double>(s.kv_len))) << ")";
    return Verdict::fail(m.str());
  };
  return law;
}

}  // namespace attncheck
