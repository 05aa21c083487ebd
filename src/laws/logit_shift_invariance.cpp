// logit_shift_invariance: softmax ignores a constant added to every logit of a
// row. Appending a column x to Q and a column 1 to K (head_dim + 1) adds
// scale * x to every logit, so the output must not change.
//
// The shift is chosen large, about 1.2 ln(largest finite value) of the working
// type (106 for f32, 852 for f64), once upwards and once downwards: exp() of
// unshifted logits then overflows or underflows to 0.
//
// Catches: softmax without max subtraction (inf / inf, 0 / 0), a max taken
// over the wrong set (another row, masked keys at a finite stand-in value),
// a fixed offset instead of the row max, a running max that is not rescaled
// correctly across tiles, head_dim-dependent paths (head_dim + 1 crosses
// vector widths).
// Cannot catch: a wrong but constant scale (seed_unscaled: the shift is then
// x instead of scale * x, still constant per row) or anything that stays
// shift-invariant (masks, dropped keys, K and V swapped).
#include <cmath>
#include <sstream>

#include "law_framework/law_support.h"

namespace attncheck {

namespace {

// p with head_dim + 1: q rows end in x, k rows end in 1; scale as given.
Problem with_shift_column(const Problem& p, double x) {
  Problem r = p;
  const Shape& s = p.shape;
  r.shape.head_dim = s.head_dim + 1;
  r.q.assign(r.shape.q_size(), 0.0);
  r.k.assign(r.shape.k_size(), 0.0);
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
    for (int64_t i = 0; i < s.q_len; ++i) {
      for (int64_t d = 0; d < s.head_dim; ++d) r.q[r.q_at(bh, i, d)] = p.q[p.q_at(bh, i, d)];
      r.q[r.q_at(bh, i, s.head_dim)] = x;
    }
    for (int64_t j = 0; j < s.kv_len; ++j) {
      for (int64_t d = 0; d < s.head_dim; ++d) r.k[r.k_at(bh, j, d)] = p.k[p.k_at(bh, j, d)];
      r.k[r.k_at(bh, j, s.head_dim)] = 1.0;
    }
  }
  return r;
}

}  // namespace

Law law_logit_shift_invariance() {
  Law law;
  law.name = "logit_shift_invariance";
  law.statement = "adding the same constant to every logit of a row (via an extra Q/K column) leaves the output unchanged";
  law.check = [](Implementation& impl, const Problem& given) {
    // The extra column changes head_dim and with it the default scale, so
    // both calls get the same explicit scale: the default rounded to the dtype.
    Problem p = given;
    p.scale = round_to(p.dtype, p.effective_scale());
    if (!std::isfinite(p.scale) || p.scale == 0)
      return Verdict::not_applicable("scale " + num(p.scale) + " does not turn a column into a logit shift");
    CheckedRun run;
    if (auto bad = run_with_oracle(impl, p, run)) return *bad;
    const std::vector<double>& out = run.out;
    const OracleResult& o = run.oracle;

    const DType working = compute_dtype(p.dtype);
    const double shift = 1.2 * std::log(max_finite(working));
    int judged = 0;
    for (double direction : {+1.0, -1.0}) {
      // Any representable x shifts every logit by exactly scale * x; x is
      // rounded, so the shift is near (not exactly) the target: that is fine.
      const double x = round_to(p.dtype, direction * shift / p.scale);
      if (!std::isfinite(x) || x == 0) continue;
      const Problem shifted = with_shift_column(p, x);
      std::vector<double> out_shifted;
      if (auto bad = run_for(impl, shifted, out_shifted)) return *bad;
      const OracleResult os = oracle(shifted);
      ++judged;
      const std::string label = "shifted by " + num(p.scale * x);
      if (auto m = mismatch(p, out, o.bound, out_shifted, os.bound, "unshifted", label.c_str()))
        return Verdict::fail("logits " + label + " (Q column " + num(x) + ", K column 1): " + *m)
            .on({{"unshifted", "", p},
                 {label, "that call with one more column: " + num(x) + " in every q row, 1 in every k row", shifted}});
    }
    if (judged == 0) return Verdict::not_applicable("the shift column is not representable in " + std::string(dtype_name(p.dtype)));
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
