// dead_codes_inert (ABI v3, "Stored formats of K and V", "Dead bytes" and "Laws version 3 makes
// possible"): NaN codes and NaN d in dead bytes change nothing. In the calls that store formats
// today (padded keys, dense K and V, head dims whole units: no block padding) the dead bytes of
// K and V are the rows of keys past a sequence's Lk, [batch][kv_heads][kv_len][units] with j >=
// Lk; problem/kv_storage.h writes there the codes of the problem's values when they are codes
// of the format, else poison (NaN codes, NaN d; int8 and int4 have no NaN code: their extreme
// one). The case (its dead rows as drawn, poison) is compared with the same case whose dead
// rows hold, in turn, poison, the format's largest finite code (times the scale or the dead
// block's d; f16/bf16's largest value) and zero codes: bit for bit when the implementation
// reruns the case bit for bit, else within the sum of the bounds and no NaN in one only (the
// spec's rule for comparison laws, law_framework/paged_calls.h compare_with_twins).
// Not applicable without a dead key on a stored side (LENGTHS is required, so kv_lens are
// drawn).
//
// Catches: a kernel that reads whole blocks of keys past a sequence's end and multiplies the
// dead rows by a zero weight (0 x NaN = NaN: vllm#53628; vLLM's 0x7F fill of unused slots), a
// d or scale of a dead block applied to the row sum, a dead key attended at all (its largest
// codes move the result). Cannot catch: a dead read every poison leaves without effect (an
// exact zero weight times a finite code: the finite twins agree), a dead int8 or int4 row read
// that way (no NaN code: only their extreme and zero codes are tried), dead bytes of packed or
// paged calls (dead_page_bytes_inert, slack_inert_and_untouched judge those; formats are not
// stored there yet).
#include <algorithm>
#include <cmath>

#include "law_framework/law_support.h"
#include "law_framework/paged_calls.h"
#include "problem/kv_codes.h"
#include "problem/kv_storage.h"

namespace attncheck {

namespace {

enum class DeadFill { poison, largest, zero };

// The largest finite value a code of f stands for before its scale (448, 57344, 127, 7;
// f16's and bf16's largest values).
double dead_largest_code_value(KvFormat f) {
  if (f == KvFormat::f16) return max_finite(DType::f16);
  if (f == KvFormat::bf16) return max_finite(DType::bf16);
  double m = 0;
  for (int64_t i = 0; i < finite_code_count(f); ++i) m = std::max(m, code_value(f, finite_code(f, i)));
  return m;
}

// p with every dead row of each stored side filled as `fill` says.
Problem with_dead_rows(const Problem& p, DeadFill fill) {
  Problem r = p;
  const int64_t kvh = p.shape.kv_head_count();
  for (const bool is_k : {true, false}) {
    const KvFormat f = is_k ? p.k_format : p.v_format;
    if (f == KvFormat::dtype) continue;
    const int64_t cols = is_k ? p.shape.head_dim : p.shape.value_dim;
    std::vector<double>& x = is_k ? r.k : r.v;
    const std::vector<double>& d = is_k ? p.k_scales : p.v_scales;
    const std::vector<float> array = kv_scale_array(p, is_k);
    const KvScale view = kv_scale_view(p, is_k, array.data());
    const double largest = dead_largest_code_value(f);
    for (int64_t b = 0; b < p.shape.batch; ++b)
      for (int64_t h = 0; h < kvh; ++h)
        for (int64_t j = p.kv_len_of(b); j < p.shape.kv_len; ++j)
          for (int64_t c = 0; c < cols; ++c) {
            const int64_t row = (b * kvh + h) * p.shape.kv_len + j;
            double value = 0;
            if (fill == DeadFill::poison) {
              value = NAN;
            } else if (fill == DeadFill::largest) {
              value = largest;
              if (info(f).scaled) value *= scale_at(view, b, h, c);
              if (info(f).block_scaled) value *= d[static_cast<std::size_t>(row * (cols / 32) + c / 32)];
            }
            x[static_cast<std::size_t>(row * cols + c)] = value;
          }
  }
  return r;
}

bool has_dead_stored_row(const Problem& p) {
  for (int64_t b = 0; b < p.shape.batch; ++b)
    if (p.kv_len_of(b) < p.shape.kv_len) return true;
  return false;
}

}  // namespace

Law law_dead_codes_inert() {
  Law law;
  law.name = "dead_codes_inert";
  law.statement = "NaN codes, NaN d, the largest codes or zeros in the stored rows of keys past a sequence's "
                  "length change nothing";
  law.features = (kAllFeatures & ~ATTNCHECK_FEATURE_STRIDES) | kKvFormatsFeature;
  law.required = kKvFormatsFeature | ATTNCHECK_FEATURE_LENGTHS;
  // As quantized_matches_oracle: head dims the blocks fit, no F64 (DTYPE storage only).
  law.tailor = [](GenOptions& g) {
    g.head_dims = {8, 32};
    g.same_dims = true;
    // Up to five calls a case: the case, its rerun and three dead-row fills.
    g.case_calls = 5;
    std::vector<DType> stored;
    for (DType t : g.dtypes)
      if (t != DType::f64) stored.push_back(t);
    if (!stored.empty()) g.dtypes = stored;
  };
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.kv_formatted()) return Verdict::not_applicable("K and V stored in the dtype");
    if (!has_dead_stored_row(p)) return Verdict::not_applicable("no key past a sequence's length: no dead rows");
    static const char* const kFills[] = {"poison (NaN codes, NaN d; int8/int4: the extreme code)",
                                         "the format's largest finite codes", "zero codes"};
    std::vector<PagedTwin> twins;
    for (const DeadFill fill : {DeadFill::poison, DeadFill::largest, DeadFill::zero}) {
      Problem t = with_dead_rows(p, fill);
      if (t == p) continue;
      const char* what = kFills[static_cast<int>(fill)];
      twins.push_back({std::string("with ") + what + " in its dead rows",
                       std::string("the case with the stored rows of every key past its sequence's length holding ") + what,
                       std::move(t)});
    }
    return compare_with_twins(impl, p, twins, TwinRule::bitwise_if_rerun,
                              "the stored rows of keys past a sequence's length changed the result");
  };
  return law;
}

}  // namespace attncheck
