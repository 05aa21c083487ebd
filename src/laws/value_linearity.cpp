// value_linearity: attention is linear in V, so att(Q, K, V1 + V2) =
// att(Q, K, V1) + att(Q, K, V2). V2 is a Gaussian tensor drawn from a seed
// derived from the problem (so a case replays exactly), sized like V1.
// V1 + V2 is rounded to the dtype; that rounding r (exact, computed here)
// moves the exact output by sum_j p_ij r_jc, at most max over visible j of
// |r_jc| since the weights are a convex combination; it is added to the
// allowed difference along with each output's oracle bound.
//
// Catches: V entering anything but the final weighted sum (K and V swapped:
// V in the logits), per-tensor normalisation or quantisation of V by its own
// magnitude, clamping, state kept between calls that differ only in V.
// Cannot catch: faults in the weights (both sides share them) or faults that
// are linear in V (a wrong value row, the founding "fix" that multiplies V by Q).
#include <cmath>
#include <random>
#include <sstream>

#include "law_framework/law_support.h"
#include "gen/gen_random.h"
#include "problem/transforms.h"

namespace attncheck {

namespace {

// A Gaussian of V's shape with a power-of-two scale near a quarter of V's
// RMS (1 when V is all zeros), rounded to the dtype.
std::vector<double> companion_values(const Problem& p) {
  double sum_sq = 0;
  for (double x : p.v) sum_sq += x * x;
  const double rms = std::sqrt(sum_sq / static_cast<double>(p.v.size()));
  const double size = rms > 0 && std::isfinite(rms) ? std::exp2(std::floor(std::log2(rms)) - 2) : 1.0;
  gen::Rng rng(problem_fingerprint(p));
  std::vector<double> v2(p.v.size());
  for (double& x : v2) x = round_to(p.dtype, size * gen::gaussian(rng));
  return v2;
}

// a + b - fl(a + b) exactly (Knuth's TwoSum), for the rounding of V1 + V2 in
// double before it is rounded to the dtype.
double two_sum_error(double a, double b, double s) {
  const double bb = s - a;
  return (a - (s - bb)) + (b - bb);
}

}  // namespace

Law law_value_linearity() {
  Law law;
  law.name = "value_linearity";
  // The work cap of its cases (GenOptions::case_calls): V1, V2 and V1 + V2.
  law.tailor = [](GenOptions& g) { g.case_calls = 3; };
  law.statement = "att(Q, K, V1 + V2) = att(Q, K, V1) + att(Q, K, V2)";
  law.check = [](Implementation& impl, const Problem& p1) {
    Problem p2 = p1, p12 = p1;
    p2.v = companion_values(p1);
    std::vector<double> rounding(p1.v.size());  // [b][h][kv_len][value_dim]: (V1 + V2) - p12.v, exactly
    for (std::size_t k = 0; k < p1.v.size(); ++k) {
      const double sum = p1.v[k] + p2.v[k];
      p12.v[k] = round_to(p1.dtype, sum);
      if (!std::isfinite(p12.v[k])) return Verdict::not_applicable("V1 + V2 overflows " + std::string(dtype_name(p1.dtype)));
      rounding[k] = (sum - p12.v[k]) + two_sum_error(p1.v[k], p2.v[k], sum);
    }
    std::vector<double> out1, out2, out12;
    if (auto bad = run_for(impl, p1, out1)) return *bad;
    if (auto bad = run_for(impl, p2, out2)) return *bad;
    if (auto bad = run_for(impl, p12, out12)) return *bad;
    const OracleResult o1 = oracle(p1), o2 = oracle(p2), o12 = oracle(p12);

    const Shape& s = p1.shape;
    std::vector<double> sum(out1.size()), tol(out1.size());
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = 0; i < s.q_len; ++i)
        for (int64_t c = 0; c < s.value_dim; ++c) {
          const int64_t at = p1.out_at(bh, i, c);
          double moved = 0;  // max over visible keys of |rounding|
          for (int64_t j = 0; j < s.kv_len; ++j)
            if (p1.visible(bh, i, j)) moved = std::max(moved, std::abs(rounding[p1.v_at(bh, j, c)]));
          sum[at] = out1[at] + out2[at];
          // This check's own addition, in double.
          const double own = std::ldexp(std::abs(sum[at]), -53);
          tol[at] = o1.bound[at] + o2.bound[at] + moved + own;
        }
    if (auto m = mismatch(p1, out12, o12.bound, sum, tol, "att(Q, K, V1 + V2)", "att(Q, K, V1) + att(Q, K, V2)"))
      return Verdict::fail(*m).on({{"V1", "", p1},
                                   {"V2", "the case with v replaced by companion values drawn from it", p2},
                                   {"V1 + V2", "the case with v + V2 (rounded to the dtype)", p12}});
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
