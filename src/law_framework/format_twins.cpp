#include "law_framework/format_twins.h"

#include <cmath>
#include <sstream>

#include "problem/dtype.h"
#include "problem/kv_storage.h"
#include "problem/number_text.h"

namespace attncheck {

namespace {

constexpr double kHalfMinNormal = 0x1p-14;  // binary16's smallest normal
constexpr double kValueCeiling = 0x1p14;    // well below binary16's largest, 65504
constexpr double kProductCeiling = 0x1p15;

// Calls at(flat) for every channel of every live row (b, kv head, j < Lk) of one side,
// [batch][kv_heads][kv_len][channels].
template <class F>
void each_live_channel(const Problem& p, bool is_k, F&& at) {
  const int64_t kvh = p.shape.kv_head_count(), cols = is_k ? p.shape.head_dim : p.shape.value_dim;
  for (int64_t b = 0; b < p.shape.batch; ++b)
    for (int64_t h = 0; h < kvh; ++h)
      for (int64_t j = 0; j < p.kv_len_of(b); ++j)
        for (int64_t c = 0; c < cols; ++c) at(((b * kvh + h) * p.shape.kv_len + j) * cols + c);
}

// The largest |q| of a live query row (0 when none).
double largest_live_query(const Problem& p) {
  double m = 0;
  const int64_t d = p.shape.head_dim;
  for (int64_t b = 0; b < p.shape.batch; ++b)
    for (int64_t h = 0; h < p.shape.heads; ++h)
      for (int64_t i = 0; i < p.q_len_of(b); ++i)
        for (int64_t c = 0; c < d; ++c) m = std::max(m, std::abs(p.q[static_cast<std::size_t>(((b * p.shape.heads + h) * p.shape.q_len + i) * d + c)]));
  return m;
}

}  // namespace

std::optional<ExponentSpan> power_of_two_span(const Problem& p, bool is_k) {
  const KvFormat f = is_k ? p.k_format : p.v_format;
  if (!info(f).scaled && !info(f).block_scaled) return std::nullopt;
  const std::vector<double>& real = is_k ? p.k : p.v;
  double lo = INFINITY, hi = 0;
  auto note = [&](double x) {
    const double a = std::abs(x);
    if (a == 0) return;
    lo = std::min(lo, a);
    hi = std::max(hi, a);
  };
  each_live_channel(p, is_k, [&](int64_t flat) { note(real[static_cast<std::size_t>(flat)]); });
  for (double s : is_k ? p.k_scales : p.v_scales) note(s);
  if (hi == 0) return std::nullopt;  // nothing a power of two would change
  // K's logits: every |q_c k_c| summed over head_dim channels stays below 2^15.
  const double ceiling =
      is_k ? std::min(kValueCeiling, kProductCeiling / std::max(1.0, largest_live_query(p) * static_cast<double>(p.shape.head_dim)))
           : kValueCeiling;
  std::optional<ExponentSpan> span;
  for (int x = -kMaxScaleExponent; x <= kMaxScaleExponent; ++x) {
    if (!(std::ldexp(lo, x) >= kHalfMinNormal && std::ldexp(hi, x) <= ceiling)) continue;
    if (!span) span = ExponentSpan{x, x};
    span->hi = x;
  }
  if (span && span->lo == span->hi) return std::nullopt;  // one exponent: nothing to compare
  return span;
}

Problem with_side_scaled(const Problem& p, bool is_k, int x) {
  Problem r = p;
  std::vector<double>& real = is_k ? r.k : r.v;
  each_live_channel(p, is_k, [&](int64_t flat) { real[static_cast<std::size_t>(flat)] = std::ldexp(real[static_cast<std::size_t>(flat)], x); });
  for (double& s : is_k ? r.k_scales : r.v_scales) s = std::ldexp(s, x);
  if (is_k) {
    const double s0 = std::isnan(p.scale)
                          ? static_cast<double>(static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.shape.head_dim))))
                          : p.scale;
    r.scale = std::ldexp(s0, -x);
  }
  return r;
}

std::optional<FormatTwin> same_values_other_format(const Problem& p, bool is_k, uint32_t offered) {
  const KvFormat f = is_k ? p.k_format : p.v_format;
  const char* side = is_k ? "K" : "V";
  const int64_t cols = is_k ? p.shape.head_dim : p.shape.value_dim, kvh = p.shape.kv_head_count();
  auto offers = [&](KvFormat g) { return g == KvFormat::dtype || (offered & (1u << static_cast<int>(g))) != 0; };
  FormatTwin t{p, ""};
  KvFormat& into = is_k ? t.problem.k_format : t.problem.v_format;
  std::vector<double>& scales = is_k ? t.problem.k_scales : t.problem.v_scales;
  ScaleGranularity& granularity = is_k ? t.problem.k_scale_granularity : t.problem.v_scale_granularity;
  std::ostringstream how;
  if (f == KvFormat::int4 && offers(KvFormat::int8)) {
    // Every INT4 value (nibble - 8) * s is the INT8 code nibble - 8 times the same s.
    into = KvFormat::int8;
    how << "the case with " << side << "'s int4 codes stored as int8 (the same scales)";
  } else if (f == KvFormat::int8 && offers(KvFormat::q8_0) && cols % 32 == 0 &&
             granularity != ScaleGranularity::per_kv_head_channel) {
    // Every block of row (b, h, j) gets d = the scale of (b, h): qs = the INT8 codes.
    const std::vector<float> array = kv_scale_array(p, is_k);
    const KvScale view = kv_scale_view(p, is_k, array.data());
    std::vector<double> d;
    d.reserve(static_cast<std::size_t>(p.shape.batch * kvh * p.shape.kv_len * (cols / 32)));
    for (int64_t b = 0; b < p.shape.batch; ++b)
      for (int64_t h = 0; h < kvh; ++h) {
        const double s = scale_at(view, b, h, 0);
        if (!(s >= kHalfMinNormal && round_to(DType::f16, s) == s)) return std::nullopt;  // d must be a normal binary16
        for (int64_t j = 0; j < p.shape.kv_len * (cols / 32); ++j) d.push_back(s);
      }
    into = KvFormat::q8_0;
    scales = std::move(d);
    granularity = ScaleGranularity::per_tensor;
    how << "the case with " << side << "'s int8 codes stored as q8_0 blocks, each d the int8 scale of its row";
  } else if (f == KvFormat::f16 && p.dtype == DType::f32) {
    into = KvFormat::dtype;
    how << "the case with " << side << "'s f16 values stored as f32 (dtype)";
  } else {
    return std::nullopt;
  }
  if (!t.problem.kv_formatted()) scales.clear();
  t.how = how.str();
  return t;
}

}  // namespace attncheck
