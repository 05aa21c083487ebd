// lengths_equal_slices: a padded batch with q_lens / kv_lens equals each
// sequence checked alone (batch 1, its own q_len and kv_len), and what the
// padding holds changes nothing: the same call with its padding rows and
// keys filled with NaN, and with huge values, gives the same output.
//
// Catches: padding keys attended (kv_lens ignored), padding rows read into
// others, lengths of one sequence applied to another, the bottom-right
// diagonal aligned to the padded extents (kv_len - q_len) instead of the
// sequence's own. Cannot catch: a fault in every sequence alike.
#include <cmath>
#include <sstream>

#include "law_framework/equivalent_calls.h"
#include "problem/dtype.h"
#include "problem/feature_transforms.h"
#include "problem/number_text.h"

namespace attncheck {

namespace {

// Sequence b of `batch`'s output against the output of the sequence alone.
std::optional<std::string> slice_mismatch(const Problem& batch, const Outcome& whole, const OracleResult& whole_o,
                                          int64_t b, const Problem& alone, const Outcome& one,
                                          const OracleResult& one_o) {
  const Shape& s = batch.shape;
  for (int64_t h = 0; h < s.heads; ++h)
    for (int64_t i = 0; i < alone.shape.q_len; ++i)
      for (int64_t c = 0; c < s.value_dim; ++c) {
        const int64_t k = batch.out_at(b * s.heads + h, i, c), k1 = alone.out_at(h, i, c);
        const double x = whole.out[k], y = one.out[k1], tol = whole_o.bound[k] + one_o.bound[k1];
        if (x == y || std::isinf(tol)) continue;
        // NaN in both at the same place agrees, as in mismatch() (law_support.h):
        // the law is about the slices being the same call, not about NaN.
        if (std::isnan(x) && std::isnan(y)) continue;
        if (!(std::abs(x - y) <= tol)) {
          std::ostringstream os;
          os << "sequence " << b << " differs from the same sequence alone at " << output_element(batch, k)
             << ": " << compared_values("in the batch", x, "alone", y, batch.dtype, tol);
          return os.str();
        }
      }
  return std::nullopt;
}

}  // namespace

Law law_lengths_equal_slices() {
  Law law;
  law.name = "lengths_equal_slices";
  // The work cap of its cases (GenOptions::case_calls): the case, each of up to 3 sequences alone, and two refills of its padding.
  law.tailor = [](GenOptions& g) { g.case_calls = 6; };
  law.statement = "a batch with q_lens/kv_lens equals each sequence alone; what padding holds changes nothing";
  law.features = kAllFeatures;
  law.required = ATTNCHECK_FEATURE_LENGTHS;
  law.check = [](Implementation& impl, const Problem& p) {
    if (p.q_lens.empty() && p.kv_lens.empty()) return Verdict::not_applicable("no lengths");
    const Outcome whole = impl.run(p);
    if (auto bad = unusable(whole)) return *bad;
    const OracleResult whole_o = oracle(p);
    bool judged = false;
    for (int64_t b = 0; b < p.shape.batch; ++b) {
      const std::optional<Problem> alone = sequence_alone(p, b);
      if (!alone) continue;
      const Outcome one = impl.run(*alone);
      if (auto bad = unusable(one)) return *bad;
      const OracleResult one_o = oracle(*alone);
      if (auto m = slice_mismatch(p, whole, whole_o, b, *alone, one, one_o))
        return Verdict::fail(*m).on(
            {{"batched", "", p}, {"alone", "sequence " + std::to_string(b) + " of the case alone (batch 1)", *alone}});
      judged = true;
    }
    const double huge = info(p.dtype).max_finite / 4;
    for (double fill : {std::numeric_limits<double>::quiet_NaN(), huge}) {
      const Problem refilled = with_padding_filled(p, round_to(p.dtype, fill));
      const Outcome again = impl.run(refilled);
      if (auto bad = unusable(again)) return *bad;
      const std::string name = std::isnan(fill) ? "padding = NaN" : "padding = " + num(round_to(p.dtype, fill));
      if (auto m = mismatch(p, whole.out, whole_o.bound, again.out, whole_o.bound, "padding as drawn", name.c_str()))
        return Verdict::fail(*m).on({{"padding as drawn", "", p},
                                     {name, "the case with every padding element of q, k and v set to that", refilled}});
    }
    if (!judged) return Verdict::not_applicable("every sequence is empty");
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
