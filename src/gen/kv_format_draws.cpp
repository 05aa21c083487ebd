#include "gen/kv_format_draws.h"

#include <cmath>

#include "problem/kv_codes.h"
#include "problem/kv_numerics.h"
#include "problem/kv_storage.h"

namespace attncheck::gen {

namespace {

// 2^e of a scale that brings the format's largest code value near 1 (kv_format_draws.h).
int kv_scale_exponent(KvFormat f) {
  switch (f) {
    case KvFormat::fp8_e4m3: return -9;   // 448 < 2^9
    case KvFormat::fp8_e5m2: return -16;  // 57344 < 2^16
    case KvFormat::int8: return -7;       // |-128| = 2^7
    case KvFormat::q8_0: return -7;
    default: return -3;                   // int4, q4_0: |-8| = 2^3
  }
}

// A float32 scale of at most 8 significant bits, (1 + m/128) 2^(e + [-2, 2]), > 0.
template <class C>
double draw_kv_scale(C& r, KvFormat f) {
  return std::ldexp(1.0 + static_cast<double>(r.integer(0, 127)) / 128.0,
                    kv_scale_exponent(f) + static_cast<int>(r.integer(-2, 2)));
}

// A block's d: a binary16 of either sign near 2^e; now and then 0 or a subnormal.
template <class C>
double draw_kv_block_d(C& r, KvFormat f) {
  const int64_t kind = r.integer(0, 19);
  if (kind == 0) return 0.0;
  const double sign = r.chance(0.5) ? -1.0 : 1.0;
  if (kind == 1) return sign * std::ldexp(static_cast<double>(r.integer(1, 1023)), -24);  // subnormal
  return sign * std::ldexp(1.0 + static_cast<double>(r.integer(0, 1023)) / 1024.0,
                           kv_scale_exponent(f) + static_cast<int>(r.integer(-2, 2)));
}

// An F16 or BF16 element: 0 now and then, else +-(1 + m 2^-bits) 2^[-8, 1].
template <class C>
double draw_kv_unscaled(C& r, KvFormat f) {
  if (r.integer(0, 15) == 0) return 0.0;
  const int bits = f == KvFormat::f16 ? 10 : 7;
  const double m = static_cast<double>(r.integer(0, (int64_t{1} << bits) - 1));
  const double x = std::ldexp(1.0 + std::ldexp(m, -bits), static_cast<int>(r.integer(-8, 1)));
  return r.chance(0.5) ? -x : x;
}

bool kv_format_fits(const Problem& p, KvFormat f, int64_t channels) {
  return kv_format_allows(f, p.dtype) && kv_channels_fit(f, channels);
}

}  // namespace

template <class C>
void store_kv_side(C& r, Problem& p, bool is_k, KvFormat f, ScaleGranularity g) {
  const Shape& s = p.shape;
  const int64_t kvh = s.kv_head_count(), cols = is_k ? s.head_dim : s.value_dim;
  std::vector<double>& x = is_k ? p.k : p.v;
  std::vector<double>& scales = is_k ? p.k_scales : p.v_scales;
  (is_k ? p.k_format : p.v_format) = f;
  (is_k ? p.k_scale_granularity : p.v_scale_granularity) = info(f).scaled ? g : ScaleGranularity::per_tensor;
  scales.assign(static_cast<std::size_t>(kv_scales_size(p, is_k)), 0.0);
  if (info(f).scaled)
    for (double& sc : scales) sc = draw_kv_scale(r, f);
  if (info(f).block_scaled)
    for (double& d : scales) d = draw_kv_block_d(r, f);
  const std::vector<float> scale_array = kv_scale_array(p, is_k);
  const KvScale view = kv_scale_view(p, is_k, scale_array.data());
  const int64_t codes = info(f).scaled || info(f).block_scaled ? finite_code_count(f) : 0;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < kvh; ++h)
      for (int64_t j = 0; j < s.kv_len; ++j)
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t at = ((b * kvh + h) * s.kv_len + j) * cols + c;
          if (j >= p.kv_len_of(b)) {
            x[at] = NAN;  // a dead key: poison codes in the call (kv_storage.h)
          } else if (codes == 0) {
            x[at] = draw_kv_unscaled(r, f);
          } else {
            double value = code_value(f, finite_code(f, r.integer(0, codes - 1)));
            if (info(f).block_scaled) {
              // Q8_0's codes reach -128 and Q4_0's -8: the value is the integer itself.
              value *= scales[static_cast<std::size_t>(((b * kvh + h) * s.kv_len + j) * (cols / 32) + c / 32)];
            } else {
              value *= scale_at(view, b, h, c);
            }
            x[at] = value;
          }
        }
}

void unstore_kv_side(Problem& p, bool is_k) {
  std::vector<double>& x = is_k ? p.k : p.v;
  for (double& e : x) e = round_to(p.dtype, e);
  (is_k ? p.k_format : p.v_format) = KvFormat::dtype;
  (is_k ? p.k_scale_granularity : p.v_scale_granularity) = ScaleGranularity::per_tensor;
  (is_k ? p.k_scales : p.v_scales).clear();
  p.numerics = numerics_that_apply(p, p.numerics);  // a bit that applied to the stored side may not any more
}

template <class C>
void draw_kv_formats(C& r, Problem& p, uint32_t offered) {
  if (p.is_backward() || p.packed_k() || p.paged() || !p.layouts.k.dense_bhsd() || !p.layouts.v.dense_bhsd()) return;
  // Each side's usable formats: offered, allowed with the dtype, fitting its channels.
  std::vector<KvFormat> usable[2];
  for (const KvFormatInfo& row : all_kv_formats())
    for (int side = 0; side < 2; ++side)
      if (row.format != KvFormat::dtype && (offered & (1u << static_cast<int>(row.format))) &&
          kv_format_fits(p, row.format, side == 0 ? p.shape.head_dim : p.shape.value_dim))
        usable[side].push_back(row.format);
  const int64_t nk = static_cast<int64_t>(usable[0].size()), nv = static_cast<int64_t>(usable[1].size());
  if (nk + nv == 0) return;
  // K and V each: DTYPE (index n) or one of its usable formats; at least one of them stored.
  const int64_t kf = r.integer(nv == 0 ? 0 : -1, nk - 1);  // -1: K in the dtype
  const int64_t vf = r.integer(kf < 0 ? 0 : -1, nv - 1);
  const auto granularity = [&] { return kScaleGranularities[r.integer(0, 3)]; };
  if (kf >= 0) store_kv_side(r, p, true, usable[0][kf], granularity());
  if (vf >= 0) store_kv_side(r, p, false, usable[1][vf], granularity());
}

void shrink_kv_formats(const Problem& p, std::vector<Problem>& out) {
  if (!p.kv_formatted()) return;
  Problem both = p;
  unstore_kv_side(both, true);
  unstore_kv_side(both, false);
  out.push_back(std::move(both));
  if (p.k_format != KvFormat::dtype && p.v_format != KvFormat::dtype) {
    Problem k_only = p, v_only = p;
    unstore_kv_side(k_only, true);
    unstore_kv_side(v_only, false);
    out.push_back(std::move(k_only));
    out.push_back(std::move(v_only));
  }
}

template void draw_kv_formats(RandomChoices&, Problem&, uint32_t);
template void draw_kv_formats(ByteChoices&, Problem&, uint32_t);
template void store_kv_side(RandomChoices&, Problem&, bool, KvFormat, ScaleGranularity);
template void store_kv_side(ByteChoices&, Problem&, bool, KvFormat, ScaleGranularity);

}  // namespace attncheck::gen
