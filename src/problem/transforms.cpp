#include "problem/transforms.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "problem/fnv1a.h"

namespace attncheck {

Problem with_mask_anded(const Problem& p, const KeyPredicate& allow) {
  Problem r = p;
  const Shape& s = p.shape;
  r.mask_broadcast = Broadcast{};  // the result is full: p's mask may have been broadcast
  r.mask.assign(s.mask_size(), 0);
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i)
      for (int64_t j = 0; j < s.kv_len; ++j) r.mask[r.mask_at(bh, i, j)] = p.mask_allows(bh, i, j) && allow(bh, i, j);
  return r;
}

Problem with_causal_as_mask(const Problem& p) {
  if (p.causal == Causal::none) return p;
  Problem r = p;
  r.causal = Causal::none;
  // Each batch's own diagonal (its lengths set it under bottom_right).
  return with_mask_anded(r, [&p](int64_t bh, int64_t i, int64_t j) { return p.causal_allows(i, j, bh / p.shape.heads); });
}

Problem with_keys_permuted(const Problem& p, const std::vector<int64_t>& perm) {
  Problem r = p;
  const Shape& s = p.shape;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t j = 0; j < s.kv_len; ++j) {
      const int64_t from = perm[j];
      for (int64_t d = 0; d < s.head_dim; ++d) r.k[r.k_at(bh, j, d)] = p.k[p.k_at(bh, from, d)];
      for (int64_t c = 0; c < s.value_dim; ++c) r.v[r.v_at(bh, j, c)] = p.v[p.v_at(bh, from, c)];
      if (p.has_mask())
        for (int64_t i = 0; i < s.q_len; ++i) r.mask[r.mask_at(bh, i, j)] = p.mask[p.mask_at(bh, i, from)];
    }
  return r;
}

Problem with_queries_permuted(const Problem& p, const std::vector<int64_t>& perm) {
  Problem r = p;
  const Shape& s = p.shape;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      const int64_t from = perm[i];
      for (int64_t d = 0; d < s.head_dim; ++d) r.q[r.q_at(bh, i, d)] = p.q[p.q_at(bh, from, d)];
      if (p.has_mask())
        for (int64_t j = 0; j < s.kv_len; ++j) r.mask[r.mask_at(bh, i, j)] = p.mask[p.mask_at(bh, from, j)];
    }
  return r;
}

Problem head_alone(const Problem& p, int64_t bh) {
  const Shape& s = p.shape;
  const int64_t b = bh / s.heads, h = bh % s.heads;
  Problem r = p;
  r.shape = {1, 1, s.q_len, s.kv_len, s.head_dim, s.value_dim};  // kv_heads: one, its own
  auto cut = [](const auto& t, int64_t begin, int64_t count) {
    return std::decay_t<decltype(t)>(t.begin() + begin, t.begin() + begin + count);
  };
  r.q = cut(p.q, p.q_at(bh, 0, 0), s.q_len * s.head_dim);
  // The kv head this query head reads (grouped heads: the group's one).
  const int64_t kv = p.kv_of(bh);
  r.k = cut(p.k, p.k_at(kv, 0, 0), s.kv_len * s.head_dim);
  r.v = cut(p.v, p.v_at(kv, 0, 0), s.kv_len * s.value_dim);
  if (p.is_backward()) r.dout = cut(p.dout, p.out_at(bh, 0, 0), s.q_len * s.value_dim);
  // Mask and bias keep their broadcast: with one batch and one head only
  // per_row changes their size ([q_len or 1][kv_len]).
  auto pairs = [&](const auto& t, const Broadcast& how) {
    std::decay_t<decltype(t)> out;
    if (t.empty()) return out;
    for (int64_t i = 0; i < (how.per_row ? s.q_len : 1); ++i)
      for (int64_t j = 0; j < s.kv_len; ++j) out.push_back(t[how.at(s, b, h, i, j)]);
    return out;
  };
  r.mask = pairs(p.mask, p.mask_broadcast);
  r.bias = pairs(p.bias, p.bias_broadcast);
  if (!p.q_lens.empty()) r.q_lens = {p.q_lens[b]};
  if (!p.kv_lens.empty()) r.kv_lens = {p.kv_lens[b]};
  if (!p.alibi_slopes.empty()) r.alibi_slopes = {p.slope_of(bh)}, r.alibi_batch_stride = 0;
  if (!p.sinks.empty()) r.sinks = {p.sinks[h]};
  return r;
}

namespace {

// The entries of a [batch][heads][q_len][kv_len] tensor stored as `how` says
// that the ranges keep, stored the same way.
template <class T>
std::vector<T> cut_pairs(const std::vector<T>& t, const Broadcast& how, const Shape& s, const Ranges& g) {
  std::vector<T> r;
  if (t.empty()) return r;
  const int64_t nb = how.per_batch ? g.batches : 1, nh = how.per_head ? g.heads : 1;
  const int64_t i0 = how.per_row ? g.q_begin : 0, ni = how.per_row ? g.q_count : 1;
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t h = 0; h < nh; ++h)
      for (int64_t i = i0; i < i0 + ni; ++i)
        for (int64_t j = g.k_begin; j < g.k_begin + g.k_count; ++j) r.push_back(t[how.at(s, b, h, i, j)]);
  return r;
}

// Lengths of the leading `batches` sequences after cutting [begin, begin + count).
std::vector<int32_t> cut_lens(const std::vector<int32_t>& lens, int64_t batches, int64_t begin, int64_t count) {
  std::vector<int32_t> r;
  for (int64_t b = 0; b < static_cast<int64_t>(lens.size()) && b < batches; ++b)
    r.push_back(static_cast<int32_t>(std::clamp<int64_t>(lens[b] - begin, 0, count)));
  return r;
}

// A packed side (ABI v3) cut as its lengths are: each kept sequence's slot
// keeps its rows [begin, begin + count), re-packed from row 0, the slack kept.
void cut_packing(std::vector<int32_t>& cu, int64_t& total, int64_t batches, int64_t begin, int64_t count) {
  if (cu.empty()) return;
  std::vector<int32_t> slots;
  for (int64_t b = 0; b < batches; ++b) slots.push_back(cu[b + 1] - cu[b]);
  slots = cut_lens(slots, batches, begin, count);
  const int64_t slack = total - cu.back();
  cu.assign(1, 0);
  for (int32_t n : slots) cu.push_back(cu.back() + n);
  total = std::max<int64_t>(1, cu.back() + slack);
}

// Paged keys (ABI v3) cut as the keys are: the kept sequences' table rows,
// when the kept keys start at key 0 (each keeps its pages); keys from a later
// start would move within their pages, so the cut is unpaged instead (the
// same keys, padded).
void cut_paging(Problem& r, const Ranges& g) {
  if (!r.paged()) return;
  if (g.k_begin == 0) {
    r.block_table.resize(static_cast<std::size_t>(g.batches * r.max_pages_per_seq));
    return;
  }
  r.block_table.clear();
  r.max_pages_per_seq = r.num_pages = r.page_size = r.page_poison = 0;
}

}  // namespace

Problem restricted(const Problem& p, const Ranges& g) {
  const Shape& s = p.shape;
  Problem r = p;
  r.shape = {g.batches, g.heads, g.q_count, g.k_count, g.head_dims, g.value_dims};
  // Grouped heads stay grouped when the kept heads are whole groups; else each
  // kept query head gets its own copy of the kv head it read.
  const int64_t group = s.heads / s.kv_head_count();
  const bool whole_groups = g.heads % group == 0;
  const int64_t kv_heads = whole_groups ? g.heads / group : g.heads;
  if (kv_heads != g.heads) r.shape.kv_heads = kv_heads;
  r.q.clear(); r.k.clear(); r.v.clear();
  for (int64_t b = 0; b < g.batches; ++b) {
    for (int64_t h = 0; h < g.heads; ++h)
      for (int64_t i = g.q_begin; i < g.q_begin + g.q_count; ++i)
        for (int64_t d = 0; d < g.head_dims; ++d) r.q.push_back(p.q[p.q_at(b * s.heads + h, i, d)]);
    for (int64_t t = 0; t < kv_heads; ++t) {
      const int64_t from = whole_groups ? b * s.kv_head_count() + t : p.kv_of(b * s.heads + t);
      for (int64_t j = g.k_begin; j < g.k_begin + g.k_count; ++j) {
        for (int64_t d = 0; d < g.head_dims; ++d) r.k.push_back(p.k[p.k_at(from, j, d)]);
        for (int64_t c = 0; c < g.value_dims; ++c) r.v.push_back(p.v[p.v_at(from, j, c)]);
      }
    }
  }
  // dout has out's shape [batch][heads][q_len][value_dim]: cut as the rows of q are.
  if (p.is_backward()) {
    r.dout.clear();
    for (int64_t b = 0; b < g.batches; ++b)
      for (int64_t h = 0; h < g.heads; ++h)
        for (int64_t i = g.q_begin; i < g.q_begin + g.q_count; ++i)
          for (int64_t c = 0; c < g.value_dims; ++c) r.dout.push_back(p.dout[p.out_at(b * s.heads + h, i, c)]);
  }
  r.mask = cut_pairs(p.mask, p.mask_broadcast, s, g);
  r.bias = cut_pairs(p.bias, p.bias_broadcast, s, g);
  r.q_lens = cut_lens(p.q_lens, g.batches, g.q_begin, g.q_count);
  r.kv_lens = cut_lens(p.kv_lens, g.batches, g.k_begin, g.k_count);
  cut_packing(r.cu_seqlens_q, r.total_q, g.batches, g.q_begin, g.q_count);
  cut_packing(r.cu_seqlens_k, r.total_k, g.batches, g.k_begin, g.k_count);
  cut_paging(r, g);
  for (auto per_head : {&Problem::alibi_slopes, &Problem::sinks})
    if (!(p.*per_head).empty()) (r.*per_head).resize(static_cast<std::size_t>(g.heads));
  if (p.alibi_per_batch()) {  // [batches][heads] of [batch][heads], the stride kept (at least the kept heads)
    r.alibi_slopes.clear();
    for (int64_t b = 0; b < g.batches; ++b)
      for (int64_t h = 0; h < g.heads; ++h) r.alibi_slopes.push_back(p.slope_of(b * s.heads + h));
  }
  return r;
}

Problem with_kv_repeated(const Problem& p) {
  const Shape& s = p.shape;
  Problem r = p;
  r.shape.kv_heads = s.heads;
  r.k.clear(); r.v.clear();
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
    const int64_t from = p.kv_of(bh);
    r.k.insert(r.k.end(), p.k.begin() + p.k_at(from, 0, 0), p.k.begin() + p.k_at(from + 1, 0, 0));
    r.v.insert(r.v.end(), p.v.begin() + p.v_at(from, 0, 0), p.v.begin() + p.v_at(from + 1, 0, 0));
  }
  return r;
}

Problem with_keys(const Problem& p, int64_t begin, int64_t count) {
  const Shape& s = p.shape;
  return restricted(p, {s.batch, s.heads, 0, s.q_len, begin, count, s.head_dim, s.value_dim});
}

Problem with_identity_block(const Problem& p, int64_t first, int64_t value_dim) {
  Problem r = p;
  const Shape& s = p.shape;
  r.shape.value_dim = value_dim;
  r.v.assign(r.shape.v_size(), 0.0);  // [batch][kv_heads][kv_len][value_dim]
  for (int64_t kv = 0; kv < s.batch * s.kv_head_count(); ++kv)
    for (int64_t c = 0; c < value_dim && first + c < s.kv_len; ++c) r.v[r.v_at(kv, first + c, c)] = 1.0;
  return r;
}

Problem with_identity_values(const Problem& p) { return with_identity_block(p, 0, p.shape.kv_len); }

long double exact_logit(const Problem& p, int64_t bh, int64_t i, int64_t j) {
  long double dot = 0;
  for (int64_t d = 0; d < p.shape.head_dim; ++d)
    dot += static_cast<long double>(p.q[p.q_at(bh, i, d)]) * static_cast<long double>(p.k[p.k_at(p.kv_of(bh), j, d)]);
  // The v2 logit chain (soft-cap, bias, ALiBi) on top, in double.
  const long double z = static_cast<long double>(p.effective_scale()) * dot;
  if (p.softcap == 0 && !p.has_bias() && p.alibi_slopes.empty()) return z;
  return p.logit_from_score(bh, i, j, static_cast<double>(z));
}

std::vector<long double> row_logits(const Problem& p, int64_t bh, int64_t i) {
  std::vector<long double> s(p.shape.kv_len, -INFINITY);
  for (int64_t j = 0; j < p.shape.kv_len; ++j)
    if (p.visible(bh, i, j)) s[j] = exact_logit(p, bh, i, j);
  return s;
}

std::vector<int64_t> mixing_permutation(int64_t n, uint64_t salt) {
  std::vector<int64_t> perm(n);
  if (n < 2) { std::iota(perm.begin(), perm.end(), 0); return perm; }
  const int64_t shift = static_cast<int64_t>(salt % static_cast<uint64_t>(n));
  for (int64_t j = 0; j < n; ++j) perm[j] = (n - 1 - j + shift) % n;
  // The reversal rotated can come back to the identity (n == 2, shift == 1);
  // the plain reversal never does.
  bool identity = true;
  for (int64_t j = 0; j < n && identity; ++j) identity = perm[j] == j;
  if (identity)
    for (int64_t j = 0; j < n; ++j) perm[j] = n - 1 - j;
  return perm;
}

uint64_t problem_fingerprint(const Problem& p) {
  Fnv1a h(Fnv1a::kSeedBasis);
  auto mix = [&h](const void* data, std::size_t bytes) { h.bytes(data, bytes); };
  auto mix_value = [&mix](auto x) { mix(&x, sizeof x); };
  mix_value(static_cast<int>(p.dtype));
  mix_value(static_cast<int>(p.causal));
  for (int64_t e : {p.shape.batch, p.shape.heads, p.shape.q_len, p.shape.kv_len, p.shape.head_dim, p.shape.value_dim})
    mix_value(e);
  mix_value(p.scale);
  for (const std::vector<double>* t : {&p.q, &p.k, &p.v}) mix(t->data(), t->size() * sizeof(double));
  mix(p.mask.data(), p.mask.size());
  // Only a backward problem mixes more: every forward problem keeps its fingerprint.
  if (p.is_backward()) {
    mix(p.dout.data(), p.dout.size() * sizeof(double));
    for (const TensorLayout* l : {&p.layouts.dout, &p.layouts.dq, &p.layouts.dk, &p.layouts.dv}) {
      mix(l->order.data(), l->order.size());
      mix(l->gap.data(), l->gap.size() * sizeof(int64_t));
    }
  }
  return h.value;
}

}  // namespace attncheck
