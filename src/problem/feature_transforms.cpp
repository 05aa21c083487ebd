#include "problem/feature_transforms.h"

#include <cmath>
#include <limits>

namespace attncheck {

Problem with_layouts(const Problem& p, const ViewLayouts& layouts) {
  Problem r = p;
  r.layouts = layouts;
  return r;
}

namespace {

// A [batch][heads][q_len][kv_len] tensor stored as `how` sliced to sequence b's
// first lq rows and lk keys, keeping the broadcast axes broadcast.
template <class T>
std::vector<T> slice_keyed(const std::vector<T>& t, const Broadcast& how, const Shape& s, int64_t b, int64_t lq,
                           int64_t lk) {
  std::vector<T> r;
  const int64_t heads = how.per_head ? s.heads : 1, rows = how.per_row ? lq : 1;
  r.reserve(static_cast<std::size_t>(heads * rows * lk));
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < lk; ++j) r.push_back(t[how.at(s, b, h, i, j)]);
  return r;
}

}  // namespace

std::optional<Problem> sequence_alone(const Problem& p, int64_t b) {
  const Shape& s = p.shape;
  const int64_t lq = p.q_len_of(b), lk = p.kv_len_of(b);
  if (lq == 0 || lk == 0) return std::nullopt;
  Problem r = p;
  r.shape.batch = 1;
  r.shape.q_len = lq;
  r.shape.kv_len = lk;
  r.q_lens.clear();
  r.kv_lens.clear();
  const int64_t kvh = s.kv_head_count();
  r.q.clear();
  r.k.clear();
  r.v.clear();
  for (int64_t h = 0; h < s.heads; ++h)
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t d = 0; d < s.head_dim; ++d) r.q.push_back(p.q[p.q_at(b * s.heads + h, i, d)]);
  for (int64_t h = 0; h < kvh; ++h)
    for (int64_t j = 0; j < lk; ++j) {
      for (int64_t d = 0; d < s.head_dim; ++d) r.k.push_back(p.k[p.k_at(b * kvh + h, j, d)]);
    }
  for (int64_t h = 0; h < kvh; ++h)
    for (int64_t j = 0; j < lk; ++j)
      for (int64_t c = 0; c < s.value_dim; ++c) r.v.push_back(p.v[p.v_at(b * kvh + h, j, c)]);
  if (p.has_mask()) r.mask = slice_keyed(p.mask, p.mask_broadcast, s, b, lq, lk);
  if (p.has_bias()) r.bias = slice_keyed(p.bias, p.bias_broadcast, s, b, lq, lk);
  r.mask_broadcast.per_batch = r.bias_broadcast.per_batch = false;
  if (!p.has_mask()) r.mask_broadcast = Broadcast{};
  if (!p.has_bias()) r.bias_broadcast = Broadcast{};
  if (p.alibi_per_batch()) {  // its row of slopes, as version 2's [heads]
    r.alibi_slopes.assign(p.alibi_slopes.begin() + b * s.heads, p.alibi_slopes.begin() + (b + 1) * s.heads);
    r.alibi_batch_stride = 0;
  }
  return r;
}

Problem with_padding_filled(const Problem& p, double value) {
  Problem r = p;
  const Shape& s = p.shape;
  const int64_t kvh = s.kv_head_count();
  for (int64_t b = 0; b < s.batch; ++b) {
    const int64_t lq = p.q_len_of(b), lk = p.kv_len_of(b);
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = lq; i < s.q_len; ++i)
        for (int64_t d = 0; d < s.head_dim; ++d) r.q[r.q_at(b * s.heads + h, i, d)] = value;
    for (int64_t h = 0; h < kvh; ++h)
      for (int64_t j = lk; j < s.kv_len; ++j) {
        for (int64_t d = 0; d < s.head_dim; ++d) r.k[r.k_at(b * kvh + h, j, d)] = value;
        for (int64_t c = 0; c < s.value_dim; ++c) r.v[r.v_at(b * kvh + h, j, c)] = value;
      }
  }
  // Bias entries that only padding reads (a broadcast entry shared with a
  // live row or key stays as it is).
  if (p.has_bias() && !std::isnan(value)) {
    std::vector<uint8_t> live(p.bias.size(), 0);
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = 0; i < s.q_len; ++i)
        for (int64_t j = 0; j < s.kv_len; ++j)
          if (p.row_exists(bh, i) && j < p.kv_len_of(bh / s.heads)) live[p.bias_at(bh, i, j)] = 1;
    for (std::size_t k = 0; k < live.size(); ++k)
      if (!live[k]) r.bias[k] = value;
  }
  return r;
}

Problem with_window_as_mask(const Problem& p) {
  Problem r = p;
  r.expand_mask();
  const Shape& s = p.shape;
  if (!r.has_mask()) r.mask.assign(static_cast<std::size_t>(s.mask_size()), 1);
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i)
      for (int64_t j = 0; j < s.kv_len; ++j)
        if (!p.window_allows(bh / s.heads, i, j)) r.mask[r.mask_at(bh, i, j)] = 0;
  r.window_left = r.window_right = -1;
  return r;
}

Problem with_alibi_as_bias(const Problem& p) {
  Problem r = p;
  r.expand_bias();
  const Shape& s = p.shape;
  if (!r.has_bias()) r.bias.assign(static_cast<std::size_t>(s.mask_size()), 0.0);
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      const int64_t d = p.diagonal(bh / s.heads, i);
      for (int64_t j = 0; j < s.kv_len; ++j) {
        const double term = round_to(p.dtype, p.slope_of(bh) * static_cast<double>(d > j ? d - j : j - d));
        double& b = r.bias[r.bias_at(bh, i, j)];
        b = round_to(p.dtype, b - term);
      }
    }
  r.alibi_slopes.clear();
  r.alibi_batch_stride = 0;
  return r;
}

std::optional<Problem> with_sink_as_key(const Problem& p) {
  if (p.sinks.empty() || p.causal != Causal::none || p.window_left >= 0 || p.window_right >= 0 ||
      !p.q_lens.empty() || !p.kv_lens.empty() || !p.alibi_slopes.empty())
    return std::nullopt;
  for (double s : p.sinks)
    if (round_to(p.dtype, s) != s) return std::nullopt;
  const Shape& s = p.shape;
  Problem r = p;
  r.shape.kv_len = s.kv_len + 1;
  r.sinks.clear();
  const int64_t kvh = s.kv_head_count(), n = s.kv_len;
  r.k.assign(static_cast<std::size_t>(r.shape.k_size()), 0.0);
  r.v.assign(static_cast<std::size_t>(r.shape.v_size()), 0.0);
  for (int64_t h = 0; h < s.batch * kvh; ++h)
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t d = 0; d < s.head_dim; ++d) r.k[r.k_at(h, j, d)] = p.k[p.k_at(h, j, d)];
      for (int64_t c = 0; c < s.value_dim; ++c) r.v[r.v_at(h, j, c)] = p.v[p.v_at(h, j, c)];
    }
  r.mask_broadcast = r.bias_broadcast = Broadcast{};
  if (p.has_mask()) r.mask.assign(static_cast<std::size_t>(r.shape.mask_size()), 1);
  r.bias.assign(static_cast<std::size_t>(r.shape.mask_size()), 0.0);
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        if (p.has_mask()) r.mask[r.mask_at(bh, i, j)] = p.mask[p.mask_at(bh, i, j)];
        if (p.has_bias()) r.bias[r.bias_at(bh, i, j)] = p.bias[p.bias_at(bh, i, j)];
      }
      r.bias[r.bias_at(bh, i, n)] = p.sinks[bh % s.heads];
    }
  return r;
}

std::optional<Problem> with_row_bias_shifted(const Problem& p, double c) {
  if (!p.has_bias()) return std::nullopt;
  Problem r = p;
  r.expand_bias();
  const int64_t kv = p.shape.kv_len;
  for (std::size_t k = 0; k < r.bias.size(); ++k) {
    double& b = r.bias[k];
    if (std::isinf(b)) continue;
    const double row_c = c * static_cast<double>(1 + (static_cast<int64_t>(k) / kv) % 3);
    const double shifted = b + row_c;
    if (round_to(p.dtype, shifted) != shifted || shifted - row_c != b) return std::nullopt;
    b = shifted;
  }
  return r;
}

}  // namespace attncheck
