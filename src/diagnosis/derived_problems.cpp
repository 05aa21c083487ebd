#include "diagnosis/derived_problems.h"

#include <cmath>
#include <limits>
#include <optional>
#include <random>

#include "problem/feature_transforms.h"
#include "problem/transforms.h"

namespace attncheck {

namespace {

// q and k widened to `head_dim` dims with fixed unit Gaussians, so scale
// faults that coincide at small head_dim (1/d = 1/sqrt(d) = 1 at d = 1) come
// apart. q [batch][heads][q_len][head_dim], k [batch][kv_heads][kv_len][head_dim].
Problem wider_head(const Problem& p, int64_t head_dim) {
  const Shape& s = p.shape;
  Problem r = p;
  r.shape.head_dim = head_dim;
  r.q.clear();
  r.k.clear();
  std::mt19937_64 rng(7);
  std::normal_distribution<double> g;
  // Drawn head by head, kv head h right after query head h (without GQA the
  // order the diagnoses of v1 cases were made with).
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
    for (int64_t i = 0; i < s.q_len; ++i)
      for (int64_t d = 0; d < head_dim; ++d)
        r.q.push_back(d < s.head_dim ? p.q[p.q_at(bh, i, d)] : round_to(p.dtype, g(rng)));
    if (bh % s.heads >= s.kv_head_count()) continue;
    const int64_t kv = bh / s.heads * s.kv_head_count() + bh % s.heads;
    for (int64_t j = 0; j < s.kv_len; ++j)
      for (int64_t d = 0; d < head_dim; ++d)
        r.k.push_back(d < s.head_dim ? p.k[p.k_at(kv, j, d)] : round_to(p.dtype, g(rng)));
  }
  return r;
}

// Block (b, h) = (0, 0) of a [batch][heads][q_len][kv_len] tensor stored as
// `how`, repeated `times` times as full blocks.
template <class T>
std::vector<T> block0_repeated(const std::vector<T>& t, const Broadcast& how, const Shape& s, int times) {
  std::vector<T> r;
  for (int n = 0; n < times; ++n)
    for (int64_t i = 0; i < s.q_len; ++i)
      for (int64_t j = 0; j < s.kv_len; ++j) r.push_back(t[how.at(s, 0, 0, i, j)]);
  return r;
}

// Two batches of two heads (no GQA), each a differently scaled copy of head
// 0, so stride mix-ups between the axes show. Lengths, slopes and sinks of
// batch 0 / head 0 repeated.
Problem two_by_two(const Problem& p) {
  const Shape& s = p.shape;
  Problem r = p;
  r.shape.batch = r.shape.heads = 2;
  r.shape.kv_heads = 0;
  r.q.clear(); r.k.clear(); r.v.clear();
  for (int t = 0; t < 4; ++t) {
    const double f = 1 + 0.5 * t;
    for (int64_t n = 0; n < s.q_len * s.head_dim; ++n) r.q.push_back(round_to(p.dtype, p.q[n] * f));
    for (int64_t n = 0; n < s.kv_len * s.head_dim; ++n) r.k.push_back(round_to(p.dtype, p.k[n] * (t % 2 ? -1 : 1)));
    for (int64_t n = 0; n < s.kv_len * s.value_dim; ++n) r.v.push_back(round_to(p.dtype, p.v[n] + t));
  }
  if (p.has_mask()) r.mask = block0_repeated(p.mask, p.mask_broadcast, s, 4), r.mask_broadcast = Broadcast{};
  if (p.has_bias()) r.bias = block0_repeated(p.bias, p.bias_broadcast, s, 4), r.bias_broadcast = Broadcast{};
  for (auto* lens : {&r.q_lens, &r.kv_lens})
    if (!lens->empty()) *lens = {(*lens)[0], (*lens)[0]};
  for (auto* per_head : {&r.alibi_slopes, &r.sinks})
    if (!per_head->empty()) *per_head = {(*per_head)[0], (*per_head)[0]};
  r.alibi_batch_stride = 0;  // block 0's slope, version 2's [heads]
  return r;
}

// Two more query rows and five more keys (fixed unit Gaussians, mask rows and
// columns visible, bias 0 there), so causal faults that coincide on tiny
// shapes come apart. Lengths stay: under them the new rows and keys are padding.
Problem longer(const Problem& p) {
  const Shape& s = p.shape;
  Problem r = p;
  r.shape.q_len = s.q_len + 2;
  r.shape.kv_len = s.kv_len + 5;
  r.q.clear(); r.k.clear(); r.v.clear(); r.mask.clear(); r.bias.clear();
  r.mask_broadcast = r.bias_broadcast = Broadcast{};
  std::mt19937_64 rng(11);
  std::normal_distribution<double> g;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
    for (int64_t i = 0; i < r.shape.q_len; ++i)
      for (int64_t d = 0; d < s.head_dim; ++d)
        r.q.push_back(i < s.q_len ? p.q[p.q_at(bh, i, d)] : round_to(p.dtype, g(rng)));
    // kv head h right after query head h, as in wider_head.
    if (bh % s.heads < s.kv_head_count()) {
      const int64_t kv = bh / s.heads * s.kv_head_count() + bh % s.heads;
      for (int64_t j = 0; j < r.shape.kv_len; ++j) {
        for (int64_t d = 0; d < s.head_dim; ++d)
          r.k.push_back(j < s.kv_len ? p.k[p.k_at(kv, j, d)] : round_to(p.dtype, g(rng)));
        for (int64_t c = 0; c < s.value_dim; ++c)
          r.v.push_back(j < s.kv_len ? p.v[p.v_at(kv, j, c)] : round_to(p.dtype, g(rng)));
      }
    }
    for (int64_t i = 0; i < r.shape.q_len; ++i)
      for (int64_t j = 0; j < r.shape.kv_len; ++j) {
        const bool old = i < s.q_len && j < s.kv_len;
        if (p.has_mask()) r.mask.push_back(old ? p.mask[p.mask_at(bh, i, j)] : 1);
        if (p.has_bias()) r.bias.push_back(old ? p.bias[p.bias_at(bh, i, j)] : 0.0);
      }
  }
  return r;
}

// Three more value columns (0.5 * (j + 1) - c), the default scale.
Problem wider_values(const Problem& p) {
  const Shape& s = p.shape;
  Problem r = p;
  r.shape.value_dim = s.value_dim + 3;
  r.v.clear();
  for (int64_t kv = 0; kv < s.batch * s.kv_head_count(); ++kv)
    for (int64_t j = 0; j < s.kv_len; ++j)
      for (int64_t c = 0; c < r.shape.value_dim; ++c)
        r.v.push_back(c < s.value_dim ? p.v[p.v_at(kv, j, c)] : round_to(p.dtype, 0.5 * (j + 1) - c));
  r.scale = NAN;
  return r;
}

// A full mask hiding row 0 and every third key (from key 1).
Problem with_a_mask(const Problem& p) {
  const Shape& s = p.shape;
  Problem r = p;
  r.mask_broadcast = Broadcast{};
  r.mask.assign(s.mask_size(), 1);
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i)
      for (int64_t j = 0; j < s.kv_len; ++j) r.mask[r.mask_at(bh, i, j)] = i != 0 && (j % 3 != 1 || s.kv_len == 1);
  return r;
}

// Fresh unit Gaussians for q, k, v and every finite bias entry (-inf keeps
// hiding its key): the same call with moderate values, where a fault that
// reads the wrong element stays inside the representable domain.
Problem with_fresh_values(const Problem& p) {
  Problem r = p;
  std::mt19937_64 rng(13);
  std::normal_distribution<double> g;
  for (std::vector<double>* t : {&r.q, &r.k, &r.v, &r.bias})
    for (double& x : *t)
      if (std::isfinite(x) || t != &r.bias) x = round_to(p.dtype, g(rng));
  return r;
}

}  // namespace

std::vector<Derived> derived_problems(const Problem& p, FeatureBits declared) {
  std::vector<Derived> d;
  d.push_back({"", p});
  if (!std::isnan(p.scale)) {
    Problem r = p;
    r.scale = NAN;
    d.push_back({"with the default scale", r});
  }
  if (p.shape.head_dim < 16) {
    Problem r = wider_head(p, 16);
    r.scale = NAN;
    d.push_back({"with head_dim 16 and the default scale", r});
  }
  if (p.causal == Causal::none)
    for (Causal c : {Causal::top_left, Causal::bottom_right}) {
      Problem r = p;
      r.causal = c;
      d.push_back({"with causal " + std::string(causal_name(c)), r});
    }
  if (!p.has_mask()) d.push_back({"with a mask", with_a_mask(p)});
  // Shrinking often ends at value_dim 1, where a scale of 1/sqrt(value_dim)
  // and no scale at all are the same fault; a wider V tells them apart.
  if (p.shape.value_dim != p.shape.head_dim)
    d.push_back({"with 3 more value columns and the default scale", wider_values(p)});
  {
    Problem r = p;  // logits hundreds apart
    for (double& x : r.q) x = round_to(p.dtype, x * 64);
    for (double& x : r.k) x = round_to(p.dtype, x * 64);
    d.push_back({"with q and k scaled by 64", r});
  }
  for (Causal c : {p.causal == Causal::none ? Causal::top_left : p.causal, Causal::bottom_right}) {
    Problem r = longer(p);
    r.causal = c;
    d.push_back({"with 2 more queries, 5 more keys and causal " + std::string(causal_name(c)), r});
  }
  if (p.shape.batch == 1 || p.shape.heads == 1) d.push_back({"with 2 batches of 2 heads", two_by_two(p)});
  // layout_invariance, gqa_equals_repeated_kv, bias_row_shift_invariance,
  // sink_equals_extra_key and lengths_equal_slices fail on cases whose own
  // views, kv heads, bias, sinks or padding the fault leaves alone: the
  // transformed calls they make, here too.
  if (p.layouts.all_dense() && (declared & ATTNCHECK_FEATURE_STRIDES)) {
    const TensorLayout bshd{{0, 2, 1}, {0, 0, 0}}, gapped{{0, 2, 1}, {0, 3, 5}};
    auto all = [](const TensorLayout& l) {
      ViewLayouts v;
      v.q = v.k = v.v = v.out = l;
      return v;
    };
    d.push_back({"in [batch][row][head][col] views", with_layouts(p, all(bshd))});
    d.push_back({"in [batch][row][head][col] views with gaps", with_layouts(p, all(gapped))});
  }
  // A case in strided views, again in dense ones: a fault of the strides
  // alone (strides ignored) is right there, a fault of the indexing (batch and
  // head strides exchanged) is not, which tells the two apart on small cases.
  if (!p.layouts.forward_dense() && (declared & ATTNCHECK_FEATURE_STRIDES))
    d.push_back({"in dense views", with_layouts(p, ViewLayouts{})});
  if (p.has_bias())  // what bias_row_shift_invariance adds
    for (double c : {4.0, 1.0, 0.25, 0.0625})
      if (std::optional<Problem> r = with_row_bias_shifted(p, c)) {
        d.push_back({"with each row's bias shifted by a constant", std::move(*r)});
        break;
      }
  if (p.shape.kv_head_count() != p.shape.heads)  // what gqa_equals_repeated_kv compares with
    d.push_back({"with K and V repeated for every query head", with_kv_repeated(p)});
  if (declared & ATTNCHECK_FEATURE_BIAS)  // what sink_equals_extra_key compares with
    if (std::optional<Problem> r = with_sink_as_key(p)) d.push_back({"with the sink as one more key", std::move(*r)});
  // A v2 fault can read a head, key or gap holding huge values (that the
  // generators draw); the same call with moderate ones.
  // With more rows too: on one row, ALiBi's sign flipped and ALiBi aligned
  // top-left differ by a constant logit shift (no difference at all).
  if (p.features() & ~kV1Features) {
    d.push_back({"with fresh unit Gaussian inputs", with_fresh_values(p)});
    for (Causal c : {Causal::top_left, Causal::bottom_right}) {
      Problem r = with_fresh_values(longer(p));
      r.causal = c;
      d.push_back({"with fresh unit Gaussian inputs, 2 more queries, 5 more keys and causal " +
                       std::string(causal_name(c)), r});
    }
  }
  if (!p.q_lens.empty() || !p.kv_lens.empty())
    d.push_back({"with NaN in the padding", with_padding_filled(p, std::numeric_limits<double>::quiet_NaN())});
  return d;
}

}  // namespace attncheck
