// Shrinking the ABI v2 fields (feature_draws.h): a counterexample comes out
// with only the features it needs, in their plainest form. Every candidate
// drops a feature or makes one field strictly simpler (in this order of
// precedence: extents, features used, the structure below, values), so
// shrinking ends; none adds a feature.
//   structure: gaps and non-BHSD orders of the layouts, missing rows and keys
//   of the lengths, bounded window sides and their widths, axes a mask or
//   bias varies along.
#include <algorithm>
#include <cmath>

#include "gen/feature_draws.h"
#include "gen/packed_draws.h"
#include "gen/kv_format_draws.h"
#include "gen/v_view_draws.h"
#include "gen/paged_draws.h"
#include "gen/generators.h"
#include "problem/transforms.h"

namespace attncheck::gen {

namespace {

template <class F>
void offer(const Problem& p, std::vector<Problem>& out, F&& change) {
  Problem c = p;
  change(c);
  out.push_back(std::move(c));
}

// The same tensor stored with axis `axis` (0 batch, 1 heads, 2 rows) no
// longer varying: its slice 0 stands for every index.
template <class T>
std::vector<T> collapsed(const std::vector<T>& t, const Broadcast& how, Broadcast& to, const Shape& s, int axis) {
  to = how;
  (axis == 0 ? to.per_batch : axis == 1 ? to.per_head : to.per_row) = false;
  std::vector<T> r;
  r.reserve(static_cast<std::size_t>(to.size(s)));
  const Shape e = stored_extents(s, to);
  for (int64_t b = 0; b < e.batch; ++b)
    for (int64_t h = 0; h < e.heads; ++h)
      for (int64_t i = 0; i < e.q_len; ++i)
        for (int64_t j = 0; j < s.kv_len; ++j) r.push_back(t[how.at(s, b, h, i, j)]);
  return r;
}

template <class T>
void offer_collapses(const Problem& p, std::vector<Problem>& out, std::vector<T> Problem::*tensor,
                     Broadcast Problem::*how) {
  const Broadcast& b = p.*how;
  const bool varies[3] = {b.per_batch, b.per_head, b.per_row};
  for (int axis = 0; axis < 3; ++axis)
    if (varies[axis])
      offer(p, out, [&](Problem& c) { c.*tensor = collapsed(p.*tensor, b, c.*how, p.shape, axis); });
}

// Each tensor's layout made dense, then its gaps removed, then its order made
// BHSD (the gradient views are dense in a forward problem: nothing from them).
void shrink_layouts(const Problem& p, std::vector<Problem>& out) {
  TensorLayout ViewLayouts::*const views[] = {&ViewLayouts::q,    &ViewLayouts::k,  &ViewLayouts::v,
                                              &ViewLayouts::out,  &ViewLayouts::dout, &ViewLayouts::dq,
                                              &ViewLayouts::dk,   &ViewLayouts::dv};
  for (auto view : views) {
    const TensorLayout& l = p.layouts.*view;
    if (l.dense_bhsd()) continue;
    offer(p, out, [&](Problem& c) { c.layouts.*view = TensorLayout{}; });
    if (l.gap != std::array<int64_t, 3>{0, 0, 0} && l.order != std::array<uint8_t, 3>{0, 1, 2}) {
      offer(p, out, [&](Problem& c) { (c.layouts.*view).gap = {0, 0, 0}; });
      offer(p, out, [&](Problem& c) { (c.layouts.*view).order = {0, 1, 2}; });
    }
  }
}

// Each missing length made full.
void shrink_lengths(const Problem& p, std::vector<Problem>& out) {
  for (auto lens : {&Problem::q_lens, &Problem::kv_lens}) {
    const std::vector<int32_t>& l = p.*lens;
    const int64_t full = lens == &Problem::q_lens ? p.shape.q_len : p.shape.kv_len;
    for (std::size_t b = 0; b < l.size(); ++b)
      if (l[b] != full) offer(p, out, [&](Problem& c) { (c.*lens)[b] = static_cast<int32_t>(full); });
  }
}

// A bounded side made unbounded (while the other stays bounded), or narrower.
void shrink_window(const Problem& p, std::vector<Problem>& out) {
  for (auto side : {&Problem::window_left, &Problem::window_right}) {
    const int64_t w = p.*side;
    if (w < 0) continue;
    const int64_t other = side == &Problem::window_left ? p.window_right : p.window_left;
    if (other >= 0) offer(p, out, [&](Problem& c) { c.*side = -1; });
    std::vector<int64_t> narrower;
    for (int64_t n : {int64_t{0}, w / 2, w - 1})
      if (n < w && std::find(narrower.begin(), narrower.end(), n) == narrower.end()) narrower.push_back(n);
    for (int64_t n : narrower) offer(p, out, [&](Problem& c) { c.*side = n; });
  }
}

// Per-head values (ALiBi slopes, sinks): all zero, then each one simpler.
void shrink_per_head(const Problem& p, std::vector<Problem>& out, std::vector<double> Problem::*values) {
  const std::vector<double>& v = p.*values;
  if (std::any_of(v.begin(), v.end(), [](double x) { return x != 0 || std::signbit(x); }))
    offer(p, out, [&](Problem& c) { std::fill((c.*values).begin(), (c.*values).end(), 0.0); });
  for (std::size_t h = 0; h < v.size(); ++h)
    for (double y : simpler_values(v[h], DType::f32)) offer(p, out, [&](Problem& c) { (c.*values)[h] = y; });
}

}  // namespace

void shrink_features(const Problem& p, std::vector<Problem>& out) {
  // Each feature dropped.
  if (p.shape.kv_head_count() != p.shape.heads) out.push_back(with_kv_repeated(p));
  if (!p.layouts.all_dense()) offer(p, out, [](Problem& c) { c.layouts = ViewLayouts{}; });
  if (!p.q_lens.empty() && !p.kv_lens.empty()) offer(p, out, [](Problem& c) { c.q_lens.clear(); c.kv_lens.clear(); });
  if (!p.q_lens.empty()) offer(p, out, [](Problem& c) { c.q_lens.clear(); });
  if (!p.kv_lens.empty()) offer(p, out, [](Problem& c) { c.kv_lens.clear(); });
  if (p.window_left >= 0 || p.window_right >= 0) offer(p, out, [](Problem& c) { c.window_left = c.window_right = -1; });
  if (p.softcap != 0) offer(p, out, [](Problem& c) { c.softcap = 0; });
  if (p.has_bias()) offer(p, out, [](Problem& c) { c.bias.clear(); c.bias_broadcast = Broadcast{}; });
  if (!p.alibi_slopes.empty()) offer(p, out, [](Problem& c) { c.alibi_slopes.clear(); c.alibi_batch_stride = 0; });
  // ABI v3's K and V expanded: materialized (the same values), then k or v alone.
  if (p.kv_broadcast()) {
    offer(p, out, [](Problem& c) { c.k_broadcast = c.v_broadcast = 0; });
    if (p.k_broadcast && p.v_broadcast) {
      offer(p, out, [](Problem& c) { c.k_broadcast = 0; });
      offer(p, out, [](Problem& c) { c.v_broadcast = 0; });
    }
  }
  // ABI v3's slopes per (batch, head): version 2's [heads] (batch entry 0's
  // row for every entry), then the rows dense (no gaps between them).
  if (p.alibi_per_batch()) {
    offer(p, out, [](Problem& c) {
      c.alibi_slopes.resize(static_cast<std::size_t>(c.shape.heads));
      c.alibi_batch_stride = 0;
    });
    if (p.alibi_batch_stride > p.shape.heads) offer(p, out, [](Problem& c) { c.alibi_batch_stride = c.shape.heads; });
  }
  if (!p.sinks.empty()) offer(p, out, [](Problem& c) { c.sinks.clear(); });
  if (p.lse_requested) offer(p, out, [](Problem& c) { c.lse_requested = false; });

  // ABI v3's packing: unpacked, then without slack or padding inside its slots.
  shrink_packing(p, out);
  // ABI v3's paging: unpaged, then smaller plain pages, then no poison.
  shrink_paging(p, out);
  // ABI v3's stored K and V formats: both unquantized, then K alone, V alone.
  shrink_kv_formats(p, out);
  // ABI v3's V as a view of K: V copied to its own memory.
  shrink_v_view(p, out);
  // Then simpler forms of what stays.
  shrink_layouts(p, out);
  shrink_lengths(p, out);
  shrink_window(p, out);
  if (p.softcap > 0)
    for (double y : simpler_values(p.softcap, DType::f32))
      if (y > 0) offer(p, out, [&](Problem& c) { c.softcap = y; });
  if (p.has_bias()) offer_collapses(p, out, &Problem::bias, &Problem::bias_broadcast);
  // Only a mask already broadcast somewhere (drawn for v2): collapsing a v1
  // problem's full mask would make it a v2 one.
  if (p.has_mask() && !p.mask_broadcast.full()) offer_collapses(p, out, &Problem::mask, &Problem::mask_broadcast);
  shrink_per_head(p, out, &Problem::alibi_slopes);
  shrink_per_head(p, out, &Problem::sinks);
}

void shrink_gradients(const Problem& p, FeatureBits required, std::vector<Problem>& out) {
  if (!p.is_backward()) return;
  // The forward problem, unless the law is about gradients (it would judge nothing).
  if (!(required & kBackwardFeature))
    offer(p, out, [](Problem& c) {
      c.dout.clear();
      c.layouts.dout = c.layouts.dq = c.layouts.dk = c.layouts.dv = TensorLayout{};
    });
  // Every gradient view dense at once, while some forward view stays strided
  // (shrink_features offers all of them dense; shrink_layouts each alone).
  if (!p.layouts.gradients_dense() && !p.layouts.forward_dense())
    offer(p, out, [](Problem& c) { c.layouts.dout = c.layouts.dq = c.layouts.dk = c.layouts.dv = TensorLayout{}; });
  // dout's rows [value_dim] zeroed one at a time: the rows the fault needs stay.
  const int64_t cols = p.shape.value_dim;
  for (int64_t row = 0; row < p.shape.rows(); ++row) {
    const auto first = p.dout.begin() + row * cols;
    if (std::all_of(first, first + cols, [](double x) { return x == 0 && !std::signbit(x); })) continue;
    offer(p, out, [&](Problem& c) { std::fill_n(c.dout.begin() + row * cols, cols, 0.0); });
  }
}

}  // namespace attncheck::gen
