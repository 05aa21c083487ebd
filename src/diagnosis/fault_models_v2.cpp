// The fault models of ABI v2 features: one small function per fault of the
// zoo's v2 members (src/impls/zoo/), each predicting from the oracle of a
// problem that expresses the fault where one does (by_fault_oracle: rows the
// fault takes out of the representable domain are free). Each returns
// nullopt on a problem that does not use its feature (or where the fault
// cannot show).
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "diagnosis/oracle_predictions.h"
#include "oracle/oracle.h"
#include "problem/feature_transforms.h"
#include "problem/transforms.h"

namespace attncheck {

namespace {

using LD = long double;

// Some batch's diagonal is not i: where the causal rule's alignment matters.
bool aligned_bottom_right_somewhere(const Problem& p) {
  if (p.causal == Causal::top_left) return false;
  for (int64_t b = 0; b < p.shape.batch; ++b)
    if (p.kv_len_of(b) != p.q_len_of(b)) return true;
  return false;
}

// ---- GQA and layouts -----------------------------------------------------------

// Query head h of each batch reads kv head h % kv_heads: the problem without
// GQA whose kv head for (b, h) is that one (k, v [batch][heads][kv_len][.]).
std::optional<Prediction> gqa_kv_modulo(const Problem& p) {
  const Shape& s = p.shape;
  const int64_t kvh = s.kv_head_count();
  if (kvh == s.heads || kvh == 1) return std::nullopt;  // h % 1 = h / heads = 0
  Problem r = p;
  r.shape.kv_heads = s.heads;
  r.k.clear();
  r.v.clear();
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t from = b * kvh + h % kvh;
      r.k.insert(r.k.end(), p.k.begin() + p.k_at(from, 0, 0), p.k.begin() + p.k_at(from + 1, 0, 0));
      r.v.insert(r.v.end(), p.v.begin() + p.v_at(from, 0, 0), p.v.begin() + p.v_at(from + 1, 0, 0));
    }
  return by_fault_oracle(r);
}

// A view's logical tensor [a][b][rows][cols] as a kernel reading its
// allocation with dense BHSD strides sees it: element n of the allocation
// (layout `l`; the encoding writes NaN into every slot that holds no element).
std::optional<std::vector<double>> read_dense(const std::vector<double>& t, const TensorLayout& l,
                                              const std::array<int64_t, 4>& e) {
  const std::array<int64_t, 4> st = l.strides(e);
  std::vector<double> memory(static_cast<std::size_t>(l.span(e)), std::numeric_limits<double>::quiet_NaN());
  std::size_t n = 0;
  for (int64_t a = 0; a < e[0]; ++a)
    for (int64_t b = 0; b < e[1]; ++b)
      for (int64_t r = 0; r < e[2]; ++r)
        for (int64_t c = 0; c < e[3]; ++c) memory[a * st[0] + b * st[1] + r * st[2] + c] = t[n++];
  if (memory.size() < t.size()) return std::nullopt;  // a dense read would leave the allocation
  return std::vector<double>(memory.begin(), memory.begin() + static_cast<std::ptrdiff_t>(t.size()));
}

std::optional<Prediction> strides_ignored(const Problem& p) {
  const ViewLayouts& l = p.layouts;
  if (l.q.dense_bhsd() && l.k.dense_bhsd() && l.v.dense_bhsd()) return std::nullopt;
  const Shape& s = p.shape;
  const int64_t kvh = s.kv_head_count();
  const auto q = read_dense(p.q, l.q, {s.batch, s.heads, s.q_len, s.head_dim});
  const auto k = read_dense(p.k, l.k, {s.batch, kvh, s.kv_len, s.head_dim});
  const auto v = read_dense(p.v, l.v, {s.batch, kvh, s.kv_len, s.value_dim});
  if (!q || !k || !v) return std::nullopt;
  Problem r = p;
  r.q = *q, r.k = *k, r.v = *v;
  r.layouts.q = r.layouts.k = r.layouts.v = TensorLayout{};
  return by_fault_oracle(r);
}

// ---- lengths and windows -------------------------------------------------------

// The key loop runs to kv_len while the diagonal (causal rule, window, ALiBi)
// stays aligned to the real lengths: those made explicit (mask, bias) where
// the alignment depends on kv_lens, then the lengths of keys dropped. The
// padding keys hold what the call sent (NaN included).
std::optional<Prediction> padding_keys_attended(const Problem& p) {
  bool short_batch = false;
  for (int64_t b = 0; b < p.shape.batch; ++b) short_batch = short_batch || p.kv_len_of(b) < p.shape.kv_len;
  if (!short_batch) return std::nullopt;
  Problem r = p;
  if (p.causal != Causal::top_left) {
    if (p.window_left >= 0 || p.window_right >= 0) r = with_window_as_mask(r);
    if (!p.alibi_slopes.empty()) r = with_alibi_as_bias(r);
    r = with_causal_as_mask(r);
  }
  r.kv_lens.clear();
  return by_fault_oracle(r);
}

// window_left = W admits W keys left of the diagonal, not W + 1.
std::optional<Prediction> window_off_by_one(const Problem& p) {
  if (p.window_left < 0) return std::nullopt;
  const int64_t w = p.window_left, heads = p.shape.heads;
  return by_fault_oracle(with_mask_anded(p, [&p, w, heads](int64_t bh, int64_t i, int64_t j) {
    return j > p.diagonal(bh / heads, i) - w;
  }));
}

// Window and ALiBi aligned to d_i = i whatever the causal rule (which keeps
// its own alignment): the window as a mask, ALiBi as a bias, both top-left.
std::optional<Prediction> window_top_left(const Problem& p) {
  const bool window = p.window_left >= 0 || p.window_right >= 0;
  if (!(window || !p.alibi_slopes.empty()) || !aligned_bottom_right_somewhere(p)) return std::nullopt;
  Problem top = p;
  top.causal = Causal::top_left;  // only to read its diagonal d_i = i
  Problem r = p;
  if (window) {
    r = with_mask_anded(p, [&top](int64_t bh, int64_t i, int64_t j) { return top.window_allows(bh / top.shape.heads, i, j); });
    r.window_left = r.window_right = -1;
  }
  if (!p.alibi_slopes.empty()) {
    Problem as_bias = with_alibi_as_bias(top);  // top-left distances, rounded as alibi_equals_bias does
    r.bias = std::move(as_bias.bias);
    r.bias_broadcast = as_bias.bias_broadcast;
    r.alibi_slopes.clear();
    r.alibi_batch_stride = 0;
  }
  return by_fault_oracle(r);
}

// ---- the logit chain and the softmax ---------------------------------------------

// tanh cap applied to scale q.k + bias + ALiBi instead of to scale q.k
// alone: no problem expresses that, so each row is computed here in long
// double (out and lse), judged within the correct oracle's bound (the cap's
// |d tanh| <= 1 passes the same rounding errors through, in another order)
// plus the rounding of the fault's own value where it is stored (out in the
// dtype, lse in float): the oracle's bound covers the rounding of the
// correct value, which may be far smaller.
std::optional<Prediction> softcap_after_bias(const Problem& p) {
  if (p.softcap == 0 || (!p.has_bias() && p.alibi_slopes.empty())) return std::nullopt;
  Prediction pr = by_oracle(p);
  const Shape& s = p.shape;
  const LD cap = p.softcap;
  std::vector<LD> z(static_cast<std::size_t>(s.kv_len));
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      if (!p.row_sees_any_key(bh, i)) continue;
      const int64_t d_i = p.diagonal(bh / s.heads, i);
      const LD sink = p.sink_of(bh);
      LD top = sink;
      for (int64_t j = 0; j < s.kv_len; ++j) {
        if (!p.visible(bh, i, j)) continue;
        LD dot = 0;
        for (int64_t d = 0; d < s.head_dim; ++d)
          dot += static_cast<LD>(p.q[p.q_at(bh, i, d)]) * static_cast<LD>(p.k[p.k_at(p.kv_of(bh), j, d)]);
        LD x = static_cast<LD>(p.effective_scale()) * dot;
        if (p.has_bias()) x += p.bias[p.bias_at(bh, i, j)];
        if (!p.alibi_slopes.empty()) x -= static_cast<LD>(p.slope_of(bh)) * std::abs(d_i - j);
        z[j] = cap * std::tanh(x / cap);
        top = std::max(top, z[j]);
      }
      LD sum = std::isinf(sink) ? 0 : std::exp(sink - top);
      for (int64_t j = 0; j < s.kv_len; ++j)
        if (p.visible(bh, i, j)) sum += (z[j] = std::exp(z[j] - top));
      for (int64_t c = 0; c < s.value_dim; ++c) {
        LD out = 0;
        for (int64_t j = 0; j < s.kv_len; ++j)
          if (p.visible(bh, i, j)) out += z[j] / sum * static_cast<LD>(p.v[p.v_at(p.kv_of(bh), j, c)]);
        const int64_t at = p.out_at(bh, i, c);
        pr.out[at] = static_cast<double>(out);
        pr.bound[at] += kBoundSafetyFactor * unit_roundoff(p.dtype) * std::abs(pr.out[at]);
      }
      const int64_t row = bh * s.q_len + i;
      pr.lse[row] = static_cast<double>(top + std::log(sum));
      pr.lse_bound[row] += kBoundSafetyFactor * unit_roundoff(DType::f32) * std::abs(pr.lse[row]);
    }
  return pr;
}

std::optional<Prediction> alibi_sign_flipped(const Problem& p) {
  bool any = false;
  for (double m : p.alibi_slopes) any = any || m != 0;
  if (!any) return std::nullopt;
  Problem r = p;
  for (double& m : r.alibi_slopes) m = -m;
  return by_fault_oracle(r);
}

std::optional<Prediction> sinks_ignored(const Problem& p) {
  if (p.sinks.empty()) return std::nullopt;
  Problem r = p;
  r.sinks.clear();
  return by_fault_oracle(r);
}

// out correct, lse divided by ln 2: one more rounding of the lse in the
// compute type before its float store, allowed on top of the oracle's bound
// (scaled by 1 / ln 2 like the lse).
std::optional<Prediction> lse_base2(const Problem& p) {
  if (!p.lse_requested) return std::nullopt;
  Prediction pr = by_oracle(p);
  const double u = unit_roundoff(DType::f32);
  for (std::size_t r = 0; r < pr.lse.size(); ++r) {
    if (!std::isfinite(pr.lse[r])) continue;  // -inf of an empty row stays -inf
    pr.lse[r] /= std::numbers::ln2;
    pr.lse_bound[r] = pr.lse_bound[r] / std::numbers::ln2 + kBoundSafetyFactor * u * std::abs(pr.lse[r]);
  }
  return pr;
}

}  // namespace

const std::vector<FaultModel>& v2_fault_models() {
  static const std::vector<FaultModel> models = {
      {"kv head h % kv_heads read for query head h (not h / (heads / kv_heads))", gqa_kv_modulo},
      {"strides ignored: q, k and v read as dense BHSD", strides_ignored},
      {"padding keys attended (the key loop runs to kv_len, past kv_lens)", padding_keys_attended},
      {"the window one key narrower on the left (window_left = W admits only W keys)", window_off_by_one},
      {"the window (and ALiBi) aligned top-left (d_i = i) whatever the causal rule", window_top_left},
      {"the soft-cap applied after the bias and ALiBi are added", softcap_after_bias},
      {"ALiBi's sign flipped (+slope * |d_i - j| added)", alibi_sign_flipped},
      {"the sinks ignored (no exp(sink) in the denominator)", sinks_ignored},
      {"lse in base 2 (log2 of the denominator: lse / ln 2)", lse_base2},
  };
  return models;
}

}  // namespace attncheck
