// grad_linear_in_dout: the gradients of sum(out * dout) are linear in dout:
// backward(a dout1 + b dout2) = a backward(dout1) + b backward(dout2). The
// drawn dout is split elementwise (by a hash of the problem) into dout1 and
// dout2 with disjoint supports, and dout3 = a dout1 + b dout2 with a = 2 (1
// where 2 x would overflow) and b = -1: every element of dout3 is an element
// of dout times a power of two, so it is exact and the only error is each
// backward's rounding. Padding rows of dout keep their drawn bits in all three
// calls (they must not matter).
//
// The bound. With the same inputs, the three calls' forwards give the same
// output and their backwards the same weights, so each call's gradients
// deviate from the gradients exact for those weights and that output, which
// are linear in dout, by at most its rounding (oracle/grad_rounding.h, model
// {false, false}: F gamma times the magnitudes + u |g^| + floor). So
//   |g^3 - (a g^1 + b g^2)| <= bound3 + |a| bound1 + |b| bound2 (+ the double rounding of the combination).
// When the three forward outputs are not bitwise equal (a nondeterministic
// forward) each call is bounded against the exact gradient instead (the full
// model: weights and forward errors included).
//
// Catches: gradients accumulated into what the buffers held (stale results,
// dk += ...), state kept between calls (a cache keyed on q, k, v that ignores
// dout), nonlinear handling of dout (saturating conversions, |dout|, a dout
// element read only when it is nonzero, a fixed dout).
// Cannot catch: any fault linear in dout, which is nearly every arithmetic
// fault (a missing rowsum term, a wrong scale, a head's gradients from one
// query head): the other gradient laws see those.
#include <cmath>
#include <cstring>

#include "law_framework/grad_support.h"
#include "problem/transforms.h"

namespace attncheck {

namespace {

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

}  // namespace

Law law_grad_linear_in_dout() {
  Law law;
  law.name = "grad_linear_in_dout";
  law.statement = "backward(a dout1 + b dout2) = a backward(dout1) + b backward(dout2), within each call's rounding";
  law.features = kEveryFeature;
  law.required = kBackwardFeature;
  law.check = [](Implementation& impl, const Problem& drawn) {
    const Problem p = backward_of(drawn);
    if (!p.is_backward()) return Verdict::not_applicable("a forward problem (no dout): the law is about gradients");
    const Shape& s = p.shape;
    const uint64_t salt = problem_fingerprint(p);
    Problem p1 = p, p2 = p, p3 = p;
    double a = 2;
    const double b = -1;
    for (double x : p.dout)
      if (std::isfinite(x) && !std::isfinite(round_to(p.dtype, 2 * x))) a = 1;
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = 0; i < s.q_len; ++i) {
        if (!p.row_exists(bh, i)) continue;
        for (int64_t c = 0; c < s.value_dim; ++c) {
          const int64_t at = p.out_at(bh, i, c);
          // splitmix-style bit of the element's index: which part it joins.
          uint64_t h = (salt ^ static_cast<uint64_t>(at)) * 0x9E3779B97F4A7C15ull;
          h ^= h >> 29;
          const bool first = (h >> 7) & 1;
          p1.dout[at] = first ? p.dout[at] : 0.0;
          p2.dout[at] = first ? 0.0 : p.dout[at];
          p3.dout[at] = first ? a * p.dout[at] : b * p.dout[at];
        }
      }
    Outcome o1, o2, o3;
    if (auto bad = run_backward(impl, p1, o1)) return *bad;
    if (auto bad = run_backward(impl, p2, o2)) return *bad;
    if (auto bad = run_backward(impl, p3, o3)) return *bad;
    const bool same_forward = same_bits(o1.out, o2.out) && same_bits(o1.out, o3.out);
    const GradErrorModel model{!same_forward, !same_forward};
    const GradBounds b1 = grad_rounding_bounds(p1, grad_magnitudes(p1, o1.out), o1, model);
    const GradBounds b2 = grad_rounding_bounds(p2, grad_magnitudes(p2, o2.out), o2, model);
    const GradBounds b3 = grad_rounding_bounds(p3, grad_magnitudes(p3, o3.out), o3, model);
    Outcome combined;
    GradBounds tol;
    for (GradTensor t : {GradTensor::dq, GradTensor::dk, GradTensor::dv}) {
      const std::vector<double>&g1 = grad_of(o1, t), &g2 = grad_of(o2, t);
      std::vector<double>& g = grad_of(combined, t);
      std::vector<double>& e = t == GradTensor::dq ? tol.dq : t == GradTensor::dk ? tol.dk : tol.dv;
      g.resize(g1.size());
      e.resize(g1.size());
      for (std::size_t k = 0; k < g1.size(); ++k) {
        g[k] = a * g1[k] + b * g2[k];
        // The combination's own rounding; a NaN gradient adds nothing (it stays judged, and wrong).
        const double size = std::abs(a * g1[k]) + std::abs(b * g2[k]);
        e[k] = std::abs(a) * bound_of(b1, t)[k] + std::abs(b) * bound_of(b2, t)[k] +
               (std::isfinite(size) ? 0x1p-52 * size : 0.0);
      }
    }
    int64_t judged = 0;
    const std::string names = "a backward(dout1) + b backward(dout2)";
    if (auto m = grad_mismatch(p3, o3, b3, combined, tol, "backward(a dout1 + b dout2)", names.c_str(), judged))
      // The case is saved: its dout split again gives these calls (not one of them, split again).
      return Verdict::fail(*m + " (a = " + num(a) + ", b = " + num(b) + ")")
          .on({{"dout1", "the case with dout kept on about half its elements (drawn from the case), 0 elsewhere", p1,
                false},
               {"dout2", "the case with dout kept on the other elements, 0 elsewhere", p2, false},
               {"a dout1 + b dout2", "the case with dout multiplied by a on dout1's elements, b on dout2's", p3,
                false}});
    if (judged == 0) return Verdict::not_applicable("no gradient element is judged");
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
