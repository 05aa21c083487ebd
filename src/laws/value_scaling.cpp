// value_scaling: attention is linear in V, so att(Q, K, a V) = a att(Q, K, V)
// for a = -1 and for a power of two a (both exact in the dtype when a V
// neither overflows nor loses bits to the subnormal range). The expected side
// a * out carries the bound |a| * bound.
//
// Catches: outputs that depend on V other than linearly (V entering the
// logits, as when K and V are swapped; clamping or saturating conversions;
// quantisation of V by a fixed scale; an activation such as ReLU on the
// output), sign errors, an output accumulator in a type too narrow for the
// values' range.
// Cannot catch: anything wrong in the weights themselves (scale, mask, max),
// since both sides share the same weights; linear faults in V (a wrong row,
// the founding "fix" that multiplies V by Q) also scale exactly.
#include <cmath>
#include <sstream>

#include "law_framework/law_support.h"

namespace attncheck {

namespace {

// p with V multiplied by a, if every product is exactly representable.
std::optional<Problem> with_values_times(const Problem& p, double a) {
  Problem r = p;
  for (double& x : r.v) {
    x *= a;
    if (!std::isfinite(x) || round_to(p.dtype, x) != x) return std::nullopt;
  }
  return r;
}

}  // namespace

Law law_value_scaling() {
  Law law;
  law.name = "value_scaling";
  law.statement = "multiplying V by -1 or by a power of two multiplies the output by the same factor";
  law.check = [](Implementation& impl, const Problem& p) {
    CheckedRun run;
    if (auto bad = run_with_oracle(impl, p, run)) return *bad;
    const std::vector<double>& out = run.out;
    const OracleResult& o = run.oracle;

    // -1 always; then the first power of two that is exact for this problem:
    // a large one first (reaches the edges of the range), smaller ones after.
    std::vector<double> factors = {-1.0};
    for (int e : {10, -10, 3, -3, 1, -1})
      if (with_values_times(p, std::ldexp(1.0, e))) { factors.push_back(std::ldexp(1.0, e)); break; }

    for (double a : factors) {
      const std::optional<Problem> scaled = with_values_times(p, a);
      if (!scaled) continue;
      std::vector<double> out_scaled;
      if (auto bad = run_for(impl, *scaled, out_scaled)) return *bad;
      const OracleResult os = oracle(*scaled);
      std::vector<double> expected(out.size()), expected_tol(out.size());
      for (std::size_t k = 0; k < out.size(); ++k) {
        expected[k] = a * out[k];  // exact: a is -1 or a power of two
        expected_tol[k] = std::abs(a) * o.bound[k];
      }
      const std::string got = "att(Q, K, " + num(a) + " V)", want = num(a) + " att(Q, K, V)";
      if (auto m = mismatch(p, out_scaled, os.bound, expected, expected_tol, got.c_str(), want.c_str()))
        return Verdict::fail(*m).on({{"V", "", p}, {num(a) + " V", "the case with v multiplied by " + num(a), *scaled}});
    }
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
