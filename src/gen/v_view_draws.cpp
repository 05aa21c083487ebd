#include "gen/v_view_draws.h"

#include <cmath>

#include "gen/kv_format_draws.h"
#include "gen/value_draws.h"
#include "problem/kv_storage.h"

namespace attncheck::gen {

void make_v_a_view_of_k(Problem& p) {
  Shape& s = p.shape;
  const int64_t keys = s.batch * s.kv_head_count() * s.kv_len;  // k's rows [batch][kv_heads][kv_len]
  p.v.assign(static_cast<std::size_t>(keys * s.value_dim), 0.0);
  for (int64_t row = 0; row < keys; ++row)
    for (int64_t c = 0; c < s.value_dim; ++c)
      p.v[static_cast<std::size_t>(row * s.value_dim + c)] = p.k[static_cast<std::size_t>(row * s.head_dim + c)];
  p.layouts.v = p.layouts.k;
  p.v_view_of_k = true;
}

namespace {

// DeepSeek's MLA: one kv head, 576 = 512 latent + 64 rope channels, V the 512
// latent ones, scale 1/sqrt(128 + 64) (FlashInfer's test, not 1/sqrt(576)).
template <class C>
void reshape_as_mla(const GenOptions& o, C& r, Problem& p) {
  Shape& s = p.shape;
  s.kv_heads = 1;
  s.head_dim = 576;
  s.value_dim = 512;
  p.scale = 1.0 / std::sqrt(192.0);
  p.q = draw_tensor(r, p.dtype, s.q_size(), o.families, s.head_dim, s.head_dim);
  p.k = draw_tensor(r, p.dtype, s.k_size(), o.families, s.head_dim, s.head_dim);
}

}  // namespace

template <class C>
void draw_v_view(const GenOptions& o, C& r, Problem& p) {
  Shape& s = p.shape;
  // K in a format: V takes it (and its granularity and scales), value_dim a whole number of
  // its units; K in the dtype: V back in the dtype too.
  if (p.v_format != KvFormat::dtype && p.k_format == KvFormat::dtype) unstore_kv_side(p, false);
  const int64_t unit = info(p.k_format).unit_channels;  // 1, 2 (int4) or 32 (q8_0, q4_0)
  const bool small = s.batch * s.heads * s.q_len * s.kv_len <= 2048;
  const bool grouped_ok = s.heads == 1 || (o.features & ATTNCHECK_FEATURE_GQA);
  // Not a paged problem (its aliased slots were made equal over the keys drawn before), nor
  // a stored one (its codes were drawn for those keys).
  if ((o.required & kVViewFeature) && small && grouped_ok && !p.paged() && !p.kv_formatted() && r.chance(0.25)) {
    reshape_as_mla(o, r, p);
  } else if (s.value_dim > s.head_dim || s.value_dim % unit != 0) {
    s.value_dim = s.head_dim;
  } else if (s.value_dim == s.head_dim && s.head_dim > unit && r.chance(0.6)) {
    s.value_dim = unit * r.integer(1, s.head_dim / unit - 1);
  }
  make_v_a_view_of_k(p);
  if (p.kv_formatted()) {
    p.v_format = p.k_format;
    p.v_scale_granularity = p.k_scale_granularity;
    p.v_scales = kv_view_v_scales(p);
  }
}

template void draw_v_view(const GenOptions&, RandomChoices&, Problem&);
template void draw_v_view(const GenOptions&, ByteChoices&, Problem&);

void shrink_v_view(const Problem& p, std::vector<Problem>& out) {
  if (!p.v_view_of_k) return;
  Problem c = p;
  c.v_view_of_k = false;  // the same values, in v's own memory
  out.push_back(std::move(c));
}

}  // namespace attncheck::gen
