// scale_power_of_two (ABI v3, "Stored formats of K and V" and "Laws version 3 makes possible"):
// K's scales (every d of a block format) times 2^e with the softmax scale times 2^-e leave out
// and lse unchanged; V's scales (or d) times 2^e multiply out by exactly 2^e and leave lse
// unchanged. Every real value of the side is then exactly 2^e times the case's
// (docs/kv-formats.md, point 3), and the law keeps |e| <= 12 and every live value, scale and
// (for K) partial product |q| |k| head_dim inside binary16's normal range, which lies inside
// every stored format's dtype's (law_framework/format_twins.h, power_of_two_span): binary
// arithmetic on the scaled side is the case's times 2^e, so the two calls are demanded equal
// bit for bit when the implementation reruns the case bit for bit, else within the sum of the
// bounds and no NaN in one only (the spec's rule for comparison laws, as the paged and packed
// laws apply it). The two calls are the case at 2^a and 2^b, a and b the ends of the span (the
// case itself as one of them when it lies inside), so the larger one holds values far beyond
// the drawn scales' (which bring the largest code near 1).
// An output element of V's pair below the dtype's normal range or 2^-60 in either call is
// not compared (zeros of either sign agree): rounding there is absolute, not relative, and a
// tiny weight or a cancelling sum may land there (f16: 2^-14 and below, seen with sinks and
// biases; f32: products of weights near e^-80).
//
// Catches: a kernel that clamps or saturates dequantized values (an fp8 operand path's
// satfinite past 448), flushes small scales or values, folds a scale into a lookup that is
// not linear, ignores a scale (flashinfer#4979: the two calls then differ by 2^e), or reads
// a per-(batch, kv head) scale by query head where the scales differ. Cannot catch: a fault
// linear in the scale (FNUZ's half the value, a wrong nibble order: equal_values_across_formats
// and quantized_matches_oracle see those), a side stored unscaled (DTYPE, F16, BF16: not
// applicable), or a side whose values span more than binary16's normal range (e5m2's
// subnormal and largest codes together: not applicable).
#include <algorithm>
#include <bit>
#include <cmath>
#include <sstream>

#include "law_framework/format_twins.h"
#include "law_framework/law_support.h"
#include "law_framework/packed_calls.h"
#include "problem/dtype.h"

namespace attncheck {

namespace {

bool p2_same_bits(double x, double y) {
  return std::bit_cast<uint64_t>(x) == std::bit_cast<uint64_t>(y) || (std::isnan(x) && std::isnan(y));
}

// One call of the pair: its problem, outcome, and the power of two its side was scaled by.
struct P2Call {
  const Problem& problem;
  const Outcome& outcome;
  int exponent;
};

// The first live element where b (V: its out times 2^(a.e - b.e)) differs from a: bit for bit,
// or beyond the sum of the bounds (oracles computed only then). nullopt when they agree.
std::optional<std::string> p2_differ(const P2Call& a, const P2Call& b, bool is_v, bool bitwise) {
  const Problem& p = a.problem;
  const int64_t heads = p.shape.heads, cols = p.shape.value_dim;
  const int shift = is_v ? a.exponent - b.exponent : 0;
  std::optional<OracleResult> oa, ob;
  if (!bitwise) oa = oracle(a.problem), ob = oracle(b.problem);
  // V's pair: an out element is compared when it is at least the dtype's smallest normal and
  // 2^-60 in both calls. Below 2^-60 a weight or a product w v of binary32 arithmetic may have
  // been subnormal (absolute rounding, up to 2^-150 a term) and moved the last bit (seen in f32
  // with weights near e^-80); above it such an error is below 2^-66 of the element's ulp.
  const double tiny = std::max(min_normal(p.dtype), 0x1p-60);
  auto differ = [&](double x, double y, double tol) {
    if (bitwise) return !p2_same_bits(x, y);
    if (x == y || std::isinf(tol)) return false;
    return !(std::abs(x - y) <= tol);
  };
  const bool lse = !a.outcome.lse.empty() && !b.outcome.lse.empty();
  std::ostringstream os;
  for (int64_t bb = 0; bb < p.shape.batch; ++bb)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < p.q_len_of(bb); ++i) {
        const int64_t bh = bb * heads + h;
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t k = p.out_at(bh, i, c);
          const double x = a.outcome.out[k], yb = b.outcome.out[k], y = std::ldexp(yb, shift);
          // Zeros of either sign agree (an underflow's sign); below `tiny` rounding is absolute.
          if (is_v && ((x == 0 && yb == 0) || std::abs(x) < tiny || std::abs(yb) < tiny)) continue;
          const double tol = bitwise ? 0 : oa->bound[k] + std::ldexp(ob->bound[k], shift);
          if (!differ(x, y, tol)) continue;
          os << "out at " << output_element(p, k) << ": " << num(x) << " at 2^" << a.exponent << " against " << num(yb);
          if (shift != 0) os << " times 2^" << shift << " = " << num(y);
          os << " at 2^" << b.exponent;
          return os.str();
        }
        if (!lse) continue;
        const int64_t r = bh * p.shape.q_len + i;
        const double x = a.outcome.lse[r], y = b.outcome.lse[r];
        if (!differ(x, y, bitwise ? 0 : oa->lse_bound[r] + ob->lse_bound[r])) continue;
        os << "lse at " << output_row(p, bh, i) << ": " << num(x) << " at 2^" << a.exponent << " against " << num(y)
           << " at 2^" << b.exponent;
        return os.str();
      }
  return std::nullopt;
}

std::string p2_side_text(const Problem& p, bool is_k, int e) {
  const KvFormat f = is_k ? p.k_format : p.v_format;
  std::ostringstream os;
  os << (is_k ? "K's " : "V's ") << kv_format_name(f) << (info(f).block_scaled ? " d" : " scales") << " times 2^" << e;
  if (is_k) os << ", the softmax scale times 2^" << -e;
  return os.str();
}

}  // namespace

Law law_scale_power_of_two() {
  Law law;
  law.name = "scale_power_of_two";
  law.statement = "K's scales times 2^e with the softmax scale times 2^-e change no bit of out and lse; V's scales "
                  "times 2^e multiply out by exactly 2^e";
  law.features = (kAllFeatures & ~ATTNCHECK_FEATURE_STRIDES) | kKvFormatsFeature;
  law.required = kKvFormatsFeature;
  // As quantized_matches_oracle: head dims the blocks fit, no F64 (DTYPE storage only).
  law.tailor = [](GenOptions& g) {
    g.head_dims = {8, 32};
    g.same_dims = true;
    // Up to six calls a case: for each side, two scaled calls and a rerun of the first.
    g.case_calls = 6;
    std::vector<DType> stored;
    for (DType t : g.dtypes)
      if (t != DType::f64) stored.push_back(t);
    if (!stored.empty()) g.dtypes = stored;
  };
  // F16 and BF16 have no scale: judged only for an implementation that offers a scaled or block format.
  law.formats_needed = [](uint32_t offered) {
    for (const KvFormatInfo& row : all_kv_formats())
      if ((row.scaled || row.block_scaled) && (offered & (1u << static_cast<int>(row.format)))) return std::string();
    return std::string("a format with scales or a block d (fp8, int8, int4, q8_0, q4_0)");
  };
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.kv_formatted()) return Verdict::not_applicable("K and V stored in the dtype");
    bool any_row = false;
    for (int64_t b = 0; b < p.shape.batch; ++b) any_row = any_row || p.q_len_of(b) > 0;
    if (!any_row) return Verdict::not_applicable("every sequence has 0 query rows");
    bool judged = false;
    std::optional<Outcome> drawn;  // the case's own outcome, run once when a pair uses it
    for (const bool is_k : {true, false}) {
      const std::optional<ExponentSpan> span = power_of_two_span(p, is_k);
      if (!span) continue;
      // The case itself and the farther end when it lies inside the span; else both ends.
      const bool inside = span->lo <= 0 && 0 <= span->hi;
      const int a = inside ? 0 : span->lo, b = inside ? (span->hi >= 1 ? span->hi : span->lo) : span->hi;
      // K's pair both name the softmax scale (a default one made explicit), so the case is
      // used as it is for V only.
      const bool use_case = a == 0 && !is_k;
      const Problem pa = use_case ? p : with_side_scaled(p, is_k, a), pb = with_side_scaled(p, is_k, b);
      Outcome first;
      if (use_case && drawn) {
        first = *drawn;
      } else {
        first = impl.run(pa);
        if (auto bad = unusable(first)) return *bad;
        if (use_case) drawn = first;
      }
      bool bitwise = false;
      if (auto bad = rerun_is_bitwise(impl, pa, first, bitwise)) return *bad;
      const Outcome second = impl.run(pb);
      if (auto bad = unusable(second)) return *bad;
      judged = true;
      if (auto m = p2_differ({pa, first, a}, {pb, second, b}, !is_k, bitwise)) {
        std::ostringstream os;
        os << p2_side_text(p, is_k, b - a) << (is_k ? " changed the result" : " did not scale out by exactly that")
           << (bitwise ? " bit for bit (the implementation reruns the case bit for bit)" : " within the bounds") << ": "
           << *m;
        const std::string name_a = use_case ? "as drawn" : p2_side_text(p, is_k, a);
        // Neither twin replays as a case (the law would scale it again): the case is saved.
        return Verdict::fail(os.str()).on(
            {{p2_side_text(p, is_k, b), "the case with " + p2_side_text(p, is_k, b), pb, false},
             {name_a, use_case ? "the case itself" : "the case with " + name_a, pa, use_case}});
      }
    }
    if (!judged)
      return Verdict::not_applicable(
          "no side stored with scales or d whose values a power of two keeps inside binary16's normal range");
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
