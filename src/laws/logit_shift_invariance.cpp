// logit_shift_invariance: softmax ignores a constant added to every logit of a
// row. Appending a column x to Q and a column 1 to K (head_dim + 1) adds
// scale * x to every logit, so the output must not change. A kernel that
// refuses head_dim + 1 (head dims a multiple of 8 only, one head_dim only) is
// shifted within its own head_dim instead: the last column of every k row set
// to 1, of every q row to 0 (the unshifted call) and to x (the shifted one).
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

// p with its last column given over to the shift, for a kernel that refuses
// head_dim + 1 (head dims a multiple of 8 only, or one head_dim): every q row
// ends in x, every k row in 1 (q [bh][q_len][head_dim], k [bh][kv_len][head_dim]).
// x = 0 gives the unshifted call; any other x adds scale * x to every logit.
Problem with_last_column(const Problem& p, double x) {
  Problem r = p;
  const Shape& s = p.shape;
  const int64_t last = s.head_dim - 1;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
    for (int64_t i = 0; i < s.q_len; ++i) r.q[r.q_at(bh, i, last)] = x;
    for (int64_t j = 0; j < s.kv_len; ++j) r.k[r.k_at(bh, j, last)] = 1.0;
  }
  return r;
}

}  // namespace

Law law_logit_shift_invariance() {
  Law law;
  law.name = "logit_shift_invariance";
  // The work cap of its cases (GenOptions::case_calls): the case, shifted, and both again when the shift is refused.
  law.tailor = [](GenOptions& g) { g.case_calls = 4; };
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
    // The unshifted call: p, or, once the kernel refused head_dim + 1, p with
    // its last column given over to the shift (same shape, a call it answers).
    Problem unshifted = p;
    bool in_place = false;

    const DType working = compute_dtype(p.dtype);
    const double shift = 1.2 * std::log(max_finite(working));
    int judged = 0;
    for (double direction : {+1.0, -1.0}) {
      // Any representable x shifts every logit by exactly scale * x; x is
      // rounded, so the shift is near (not exactly) the target: that is fine.
      const double x = round_to(p.dtype, direction * shift / p.scale);
      if (!std::isfinite(x) || x == 0) continue;
      Problem shifted = in_place ? with_last_column(p, x) : with_shift_column(p, x);
      std::vector<double> out_shifted;
      if (auto bad = run_for(impl, shifted, out_shifted)) {
        if (in_place || bad->status != VerdictStatus::unsupported || p.shape.head_dim < 2) return *bad;
        in_place = true;  // head_dim + 1 refused: shift within the kernel's own head_dim
        unshifted = with_last_column(p, 0.0);
        if (auto bad0 = run_with_oracle(impl, unshifted, run)) return *bad0;
        shifted = with_last_column(p, x);
        if (auto again = run_for(impl, shifted, out_shifted)) return *again;
      }
      const OracleResult os = oracle(shifted);
      ++judged;
      const std::string label = "shifted by " + num(p.scale * x);
      if (auto m = mismatch(unshifted, run.out, run.oracle.bound, out_shifted, os.bound, "unshifted", label.c_str())) {
        if (!in_place)
          return Verdict::fail("logits " + label + " (Q column " + num(x) + ", K column 1): " + *m)
              .on({{"unshifted", "", p},
                   {label, "that call with one more column: " + num(x) + " in every q row, 1 in every k row",
                    shifted}});
        return Verdict::fail("logits " + label + " (last Q column " + num(x) + ", last K column 1): " + *m)
            .on({{"unshifted", "the case with its last column 0 in every q row and 1 in every k row", unshifted},
                 {label, "that call with " + num(x) + " in the last column of every q row", shifted}});
      }
    }
    if (judged == 0) return Verdict::not_applicable("the shift column is not representable in " + std::string(dtype_name(p.dtype)));
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
