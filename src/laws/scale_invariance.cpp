// scale_invariance: logits depend on scale * q . k only. Two exact rewrites:
//   (a) (a Q, K / a) with a a power of two, same scale: every product q_d k_d
//       is unchanged, so the output is too;
//   (b) scale s on (Q, K) equals scale 1 on (s Q, K). s Q is rounded to the
//       dtype; the two exact outputs then differ by what the oracle computes
//       for both, and that difference is added to the allowed one.
//
// Catches: a scale ignored or applied twice (seed_unscaled), the default scale
// wrong (scale_inverse_d with the default scale: (b) asks for 1/sqrt(head_dim)
// explicitly), outputs that depend on Q or K alone rather than on their
// products (the founding "fix" that multiplies V by Q; K and V swapped),
// normalisation or quantisation of Q or K by their own magnitude.
// Cannot catch: faults that act on the logits as a whole (a wrong max, a
// dropped key, a mask error): both sides carry them alike.
#include <cmath>
#include <sstream>

#include "law_framework/law_support.h"

namespace attncheck {

namespace {

// Multiplies every element of t by m into `out`; false unless every product
// is finite and exactly representable in the dtype (no overflow, no bits lost
// to the subnormal range).
bool scaled_exactly(DType dtype, const std::vector<double>& t, double m, std::vector<double>& out) {
  out.resize(t.size());
  for (std::size_t k = 0; k < t.size(); ++k) {
    out[k] = t[k] * m;
    if (!std::isfinite(out[k]) || round_to(dtype, out[k]) != out[k] || out[k] / m != t[k]) return false;
  }
  return true;
}

// The problem with (2^e Q, K / 2^e) for the first e in a fixed list that is
// exact for this problem; nullopt when none is.
std::optional<Problem> with_product_preserved(const Problem& p, double& factor) {
  for (int e : {6, -6, 2, -2, 1, -1}) {
    Problem r = p;
    factor = std::ldexp(1.0, e);
    if (scaled_exactly(p.dtype, p.q, factor, r.q) && scaled_exactly(p.dtype, p.k, 1 / factor, r.k)) return r;
  }
  return std::nullopt;
}

}  // namespace

Law law_scale_invariance() {
  Law law;
  law.name = "scale_invariance";
  // The work cap of its cases (GenOptions::case_calls): the case, the scale moved into q, and folded.
  law.tailor = [](GenOptions& g) { g.case_calls = 3; };
  law.statement = "(aQ, K/a) gives the same output, and scale s on (Q, K) equals scale 1 on (sQ, K)";
  law.check = [](Implementation& impl, const Problem& p) {
    CheckedRun run;
    if (auto bad = run_with_oracle(impl, p, run)) return *bad;
    const std::vector<double>& out = run.out;
    const OracleResult& o = run.oracle;
    int judged = 0;

    double a = 1;
    if (const std::optional<Problem> moved = with_product_preserved(p, a)) {
      std::vector<double> out_moved;
      if (auto bad = run_for(impl, *moved, out_moved)) return *bad;
      ++judged;
      // (GCC 12 warns falsely, -Wrestrict, on "(" + std::string: bug 105329.)
      const std::string label = std::string("(").append(num(a)).append(" Q, K / ").append(num(a)).append(")");
      if (auto m = mismatch(p, out, o.bound, out_moved, oracle(*moved).bound, "(Q, K)", label.c_str()))
        return Verdict::fail(*m).on(
            {{"(Q, K)", "", p}, {label, "the case with q multiplied by " + num(a) + " and k divided by it", *moved}});
    }

    const double s = p.effective_scale();
    Problem folded = p;
    folded.scale = 1.0;
    bool representable = std::isfinite(s);
    for (double& x : folded.q) {
      x = round_to(p.dtype, s * x);
      representable = representable && std::isfinite(x);
    }
    if (representable) {
      std::vector<double> out_folded;
      if (auto bad = run_for(impl, folded, out_folded)) return *bad;
      const OracleResult of = oracle(folded);
      ++judged;
      // Rounding s Q to the dtype changed the exact answer by |exact - exact_folded|.
      std::vector<double> tol = o.bound;
      // Rows outside either problem's domain are not judged (infinite tolerance).
      for (std::size_t k = 0; k < tol.size(); ++k)
        tol[k] = std::isinf(tol[k]) || std::isinf(of.bound[k]) ? INFINITY : tol[k] + std::abs(o.exact[k] - of.exact[k]);
      const std::string label = "scale 1 on (" + num(s) + " Q, K)";
      const std::string given = std::isnan(p.scale) ? "default scale on (Q, K)" : "scale " + num(s) + " on (Q, K)";
      if (auto m = mismatch(p, out, tol, out_folded, of.bound, given.c_str(), label.c_str()))
        return Verdict::fail(*m).on({{given, "", p},
                                     {label, "the case with its scale folded into q (rounded), scale 1", folded}});
    }
    if (judged == 0) return Verdict::not_applicable("no power-of-two rescaling of Q and K and no s Q is representable");
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
