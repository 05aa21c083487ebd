// Drawing the ABI v2 fields (feature_draws.h). Values are chosen to provoke
// the faults kernels have: padding that is NaN or huge (it must not leak),
// windows of 0 and 1 keys and windows wider than the row, soft-caps that bind,
// biases with -inf entries and whole hidden rows, the ALiBi family real models
// use, sinks from -80 to 80 and beyond.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "gen/feature_draws.h"
#include "gen/kv_format_draws.h"
#include "gen/numerics_draws.h"
#include "gen/v_view_draws.h"
#include "gen/packed_draws.h"
#include "gen/paged_draws.h"
#include "gen/value_draws.h"
#include "problem/kv_broadcast.h"

namespace attncheck::gen {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A permutation of the axes {batch, head, row}: BSHD (what FlashAttention
// takes) half the time, else BHSD or any order.
template <class C>
std::array<uint8_t, 3> draw_order(C& r) {
  const double c = r.unit();
  if (c < 0.5) return {0, 2, 1};
  if (c < 0.7) return {0, 1, 2};
  std::array<uint8_t, 3> o{0, 1, 2};
  for (int i = 2; i > 0; --i) std::swap(o[i], o[r.integer(0, i)]);
  return o;
}

// Unused elements after each step of an axis: mostly none, else a few, now
// and then 15 to 17 (misaligned rows for vectorised kernels).
template <class C>
int64_t draw_gap(C& r) {
  const double c = r.unit();
  if (c < 0.55) return 0;
  if (c < 0.9) return r.integer(1, 4);
  return r.integer(15, 17);
}

template <class C>
TensorLayout draw_layout(C& r) {
  TensorLayout l;
  if (r.chance(0.25)) return l;  // dense BHSD beside strided ones
  l.order = draw_order(r);
  for (int64_t& g : l.gap) g = draw_gap(r);
  return l;
}

template <class C>
void draw_layouts(C& r, ViewLayouts& v) {
  if (r.chance(0.35)) {  // one layout for all four, as most kernels take them
    const TensorLayout l = draw_layout(r);
    v.q = v.k = v.v = v.out = l;
    return;
  }
  for (TensorLayout* l : {&v.q, &v.k, &v.v, &v.out}) *l = draw_layout(r);
}

// One length in [0, full]: none, all, one, or anything between.
template <class C>
int32_t draw_len(C& r, int64_t full) {
  const double c = r.unit();
  if (c < 0.15) return 0;
  if (c < 0.4) return static_cast<int32_t>(full);
  if (c < 0.5) return static_cast<int32_t>(std::min<int64_t>(1, full));
  return static_cast<int32_t>(r.integer(0, full));
}

// What padding rows and keys hold: NaN, a huge value, a value whose square
// overflows, or (nullopt) the drawn values left there: garbage that looks plausible.
// (NaN reads +max under kFiniteOnly among `families`.)
template <class C>
std::optional<double> draw_padding_value(C& r, DType t, unsigned families) {
  switch (r.integer(0, 3)) {
    case 0: return (families & kFiniteOnly) ? max_finite(t) : kNaN;
    case 1: return r.chance(0.5) ? max_finite(t) : -max_finite(t);
    case 2: return round_to(t, std::sqrt(max_finite(t)));
    default: return std::nullopt;
  }
}

// The fuzz targets' families are among `families`: the v2 values may be their edge values too.
bool draws_specials(unsigned families) { return (families & (kSpecials | kRawBits)) != 0; }

// Writes `fill` into every padding row of q and padding key of k and v.
void fill_padding(Problem& p, double fill) {
  const Shape& s = p.shape;
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = p.q_len_of(b); i < s.q_len; ++i)
        for (int64_t d = 0; d < s.head_dim; ++d) p.q[p.q_at(b * s.heads + h, i, d)] = fill;
    for (int64_t kh = 0; kh < s.kv_head_count(); ++kh)
      for (int64_t j = p.kv_len_of(b); j < s.kv_len; ++j) {
        const int64_t kv_bh = b * s.kv_head_count() + kh;
        for (int64_t d = 0; d < s.head_dim; ++d) p.k[p.k_at(kv_bh, j, d)] = fill;
        for (int64_t c = 0; c < s.value_dim; ++c) p.v[p.v_at(kv_bh, j, c)] = fill;
      }
  }
}

// A side of a window: 0 (the diagonal alone), a few keys, or up to past the row.
template <class C>
int64_t draw_window_side(C& r, int64_t kv_len) {
  const double c = r.unit();
  if (c < 0.2) return 0;
  if (c < 0.7) return r.integer(1, std::min<int64_t>(kv_len, 8));
  return r.integer(0, kv_len + 2);
}

// Soft-caps that bind on unit-variance logits (below 5) and the values models
// use (Gemma 2: 50 for attention, 30 for the final logits).
// With the fuzz targets' families, now and then any magnitude of f32 (1 for 0, inf or NaN).
template <class C>
double draw_softcap(C& r, unsigned families) {
  if (draws_specials(families) && r.chance(0.25)) {
    const double x = std::abs(raw_value(r, DType::f32));
    return std::isfinite(x) && x > 0 ? x : 1;
  }
  const double c = r.unit();
  if (c < 0.25) {
    constexpr double kModel[] = {1, 5, 20, 30, 50};
    return kModel[r.integer(0, 4)];
  }
  if (c < 0.35) return round_to(DType::f32, 0.25 + 0.75 * r.unit());
  return round_to(DType::f32, std::exp(r.unit() * std::log(50.0)));  // log-uniform 1..50
}

// Bias values in t: Gaussians of a drawn width, small integers, or finite
// large negatives (-1e4: a soft mask that must not hide the key), with -inf
// sprinkled in (hidden keys) and now and then whole rows of -inf.
// With the fuzz targets' families, a fourth kind: their edge values and raw
// patterns, NaN and +inf read as -inf (the ABI's bias holds neither), or
// folded to ±max under kFiniteOnly.
template <class C>
std::vector<double> draw_bias(C& r, DType t, const Shape& stored, unsigned families) {
  const int64_t n = stored.mask_size(), cols = stored.kv_len;
  std::vector<double> b(static_cast<std::size_t>(n));
  const int kind = static_cast<int>(r.integer(0, draws_specials(families) ? 3 : 2));
  const double sigma = std::exp2(r.integer(-3, 3));
  for (double& x : b) {
    switch (kind) {
      case 0: x = r.gaussian() * sigma; break;
      case 1: x = static_cast<double>(r.integer(-3, 3)); break;
      case 2: x = r.chance(0.3) ? -1e4 : r.gaussian() * sigma; break;
      default:
        x = special_value(r, t);
        if (families & kFiniteOnly) x = fold_to_finite(t, x);
        else if (std::isnan(x) || x == kInf) x = -kInf;
        continue;  // already the dtype's, -inf kept
    }
    x = round_to(t, x);
    if (std::isinf(x)) x = std::copysign(max_finite(t), x);
  }
  if (r.chance(0.5)) {
    const double density = 0.05 + 0.45 * r.unit();
    for (double& x : b)
      if (r.chance(density)) x = -kInf;
  }
  if (r.chance(0.2))
    for (int64_t row = 0; row < n / cols; ++row)
      if (r.chance(0.3)) std::fill_n(b.begin() + row * cols, cols, -kInf);
  return b;
}

// Marks the stored bias entries that only padding rows or keys read and
// writes NaN there: what a caller that leaves padding uninitialised sends.
void poison_bias_padding(Problem& p) {
  const Shape& s = p.shape;
  std::vector<uint8_t> live(p.bias.size(), 0);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < p.q_len_of(b); ++i)
        for (int64_t j = 0; j < p.kv_len_of(b); ++j) live[p.bias_at(b * s.heads + h, i, j)] = 1;
  for (std::size_t e = 0; e < live.size(); ++e)
    if (!live[e]) p.bias[e] = kNaN;
}

// ALiBi slopes: the family of the ALiBi paper, 2^(-8k/heads) for k = 1..heads,
// most of the time; else random slopes, log-uniform over [2^-10, 1], some 0.
// With the fuzz targets' families, now and then each slope any finite f32 edge value.
template <class C>
std::vector<double> draw_alibi(C& r, int64_t heads, unsigned families) {
  std::vector<double> m(static_cast<std::size_t>(heads));
  if (draws_specials(families) && r.chance(0.25)) {
    for (double& x : m) x = fold_to_finite(DType::f32, special_value(r, DType::f32));
    return m;
  }
  const bool family = r.chance(0.6);
  for (int64_t k = 0; k < heads; ++k) {
    double x = family ? std::exp2(-8.0 * static_cast<double>(k + 1) / static_cast<double>(heads))
                      : (r.chance(0.1) ? 0.0 : std::exp2(-10 * r.unit()));
    m[k] = round_to(DType::f32, x);
  }
  return m;
}

// ALiBi slopes per (batch, head) (ABI v3's ALIBI_BATCH): p.alibi_slopes (the
// [heads] just drawn) becomes [batch][heads]: batch entry 0 keeps them, each
// other entry draws its own, or repeats entry 0's or halves them (a
// kernel that reads one entry's row for all is wrong wherever two rows
// differ). The call's stride is heads (dense) or heads + 1..3 (the gaps
// between the rows poisoned by the call layout).
template <class C>
void draw_alibi_batch(C& r, Problem& p, unsigned families) {
  const int64_t heads = p.shape.heads;
  std::vector<double> rows = p.alibi_slopes;
  for (int64_t b = 1; b < p.shape.batch; ++b) {
    const double c = r.unit();
    std::vector<double> row = c < 0.6 ? draw_alibi(r, heads, families) : std::vector<double>(p.alibi_slopes);
    if (c >= 0.8)
      for (double& x : row) x = round_to(DType::f32, x * 0.5);
    rows.insert(rows.end(), row.begin(), row.end());
  }
  p.alibi_slopes = std::move(rows);
  p.alibi_batch_stride = r.chance(0.5) ? heads : heads + r.integer(1, 3);
}

// K and V expanded (ABI v3's BROADCAST_KV): k and v each over the batch axis,
// the kv-head axis, both or neither (not both neither), among the axes the
// shape has (two or more entries, two or more kv heads), their values made
// equal across them (problem/kv_broadcast.h). Only for padded keys in the
// dtype, not a view of k, forward: the others are left dense.
template <class C>
void draw_kv_broadcast(C& r, Problem& p) {
  if (p.is_backward() || p.packed_k() || p.paged() || p.kv_formatted() || p.v_view_of_k) return;
  const int64_t axes = (p.shape.batch > 1 ? kKvBroadcastBatch : 0) | (p.shape.kv_head_count() > 1 ? kKvBroadcastHeads : 0);
  if (axes == 0) return;
  // No rejection loop: a source of choices may be exhausted and answer the
  // same choice for ever (the fuzzers' bytes: a loop until k or v is expanded
  // never ended). k dense, v is expanded over some of the axes.
  const auto some_axes = [&] {
    const int64_t how = axes & r.integer(1, 3);
    return how ? how : axes;
  };
  const int64_t how_k = axes & r.integer(0, 3);
  const int64_t how_v = how_k == 0 ? some_axes() : r.chance(0.6) ? how_k : axes & r.integer(0, 3);
  if (how_k) expand_kv(p, true, how_k);
  if (how_v) expand_kv(p, false, how_v);
}

// Sink logits over a wide range: near the logits, far above them (the sink
// takes all the weight), far below (it takes none), and extremes.
// With the fuzz targets' families, now and then each sink any finite f32 edge value.
template <class C>
std::vector<double> draw_sinks(C& r, int64_t heads, unsigned families) {
  std::vector<double> s(static_cast<std::size_t>(heads));
  if (draws_specials(families) && r.chance(0.25)) {
    for (double& x : s) x = fold_to_finite(DType::f32, special_value(r, DType::f32));
    return s;
  }
  for (double& x : s) {
    const double c = r.unit();
    if (c < 0.4) x = r.gaussian() * 2;
    else if (c < 0.8) x = -80 + 160 * r.unit();
    else if (c < 0.9) x = 0;
    else x = (r.chance(0.5) ? -1 : 1) * std::exp2(10 + 4 * r.unit());
    x = round_to(DType::f32, x);
  }
  return s;
}

// The gradient layouts (dout, dq, dk, dv) of a backward problem: all four
// like q's (a training step's tensors laid out alike) or each its own, so a
// kernel that reads dout with q's strides, or writes dk with k's, is caught.
template <class C>
void draw_gradient_layouts(C& r, ViewLayouts& v) {
  if (r.chance(0.4)) {
    v.dout = v.dq = v.dk = v.dv = v.q;
    return;
  }
  for (TensorLayout* l : {&v.dout, &v.dq, &v.dk, &v.dv}) *l = draw_layout(r);
}

// dout [batch][heads][q_len][value_dim] of a backward problem: values from the
// families v is drawn from (a gradient flowing back is of the output's
// magnitude); now and then some rows zero (they add nothing to any gradient,
// and rowsum(dO * O) is 0 there); padding rows garbage, as q's are.
template <class C>
void draw_dout(const GenOptions& o, C& r, Problem& p) {
  const Shape& s = p.shape;
  p.dout = draw_tensor(r, p.dtype, s.out_size(), o.families, s.head_dim, s.value_dim);
  if (r.chance(0.2))
    for (int64_t row = 0; row < s.rows(); ++row)
      if (r.chance(0.3)) std::fill_n(p.dout.begin() + row * s.value_dim, s.value_dim, 0.0);
  if (p.q_lens.empty()) return;
  if (const std::optional<double> fill = draw_padding_value(r, p.dtype, o.families))
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = p.q_len_of(bh / s.heads); i < s.q_len; ++i)
        std::fill_n(p.dout.begin() + p.out_at(bh, i, 0), s.value_dim, *fill);
}

}  // namespace

template <class C>
void draw_kv_heads(C& r, int64_t max_heads, Shape& s, bool required) {
  if (!required && !r.chance(0.45)) return;
  // Only heads >= 4 have a group structure that tells kv head h / group from
  // h % kv_heads (both are 0 when kv_heads is 1, and heads 2 or 3 allow no
  // other kv_heads): grouped calls get 4, 6 or 8 query heads most of the
  // time, past a smaller cap on heads (the default profile's is 3).
  const int64_t cap = std::max<int64_t>(max_heads, 8);
  if (s.heads < 4 && r.chance(0.75)) s.heads = 2 * r.integer(2, cap / 2);
  if (s.heads == 1) {
    if (max_heads < 2) return;
    s.heads = r.integer(2, max_heads);
  }
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d < s.heads; ++d)
    if (s.heads % d == 0) divisors.push_back(d);
  s.kv_heads = r.chance(0.33) ? 1 : divisors[r.integer(0, static_cast<int64_t>(divisors.size()) - 1)];
}

template <class C>
Broadcast draw_broadcast(C& r, bool rows) {
  Broadcast b;
  b.per_batch = r.chance(0.6);
  b.per_head = r.chance(0.6);
  b.per_row = r.chance(0.6) && rows;
  return b;
}

Shape stored_extents(const Shape& s, const Broadcast& how) {
  return {how.per_batch ? s.batch : 1, how.per_head ? s.heads : 1, how.per_row ? s.q_len : 1, s.kv_len, 1, 1};
}

template <class C>
void draw_late_features(const GenOptions& o, bool dense_ok, C& r, Problem& p, bool broadcast_bias) {
  const FeatureBits f = o.features;
  const Shape& s = p.shape;
  // A feature the options require is always drawn (the law needs it).
  auto want = [&](FeatureBits bit, double probability) {
    return (f & bit) && ((o.required & bit) || r.chance(probability));
  };
  if (want(ATTNCHECK_FEATURE_STRIDES, 0.45)) draw_layouts(r, p.layouts);
  if (want(ATTNCHECK_FEATURE_LENGTHS, 0.45)) {
    const int64_t which = r.integer(0, 2);  // q only, kv only, both
    if (which != 1)
      for (int64_t b = 0; b < s.batch; ++b) p.q_lens.push_back(draw_len(r, s.q_len));
    if (which != 0)
      for (int64_t b = 0; b < s.batch; ++b) p.kv_lens.push_back(draw_len(r, s.kv_len));
    if (const std::optional<double> fill = draw_padding_value(r, p.dtype, o.families)) fill_padding(p, *fill);
  }
  if (want(ATTNCHECK_FEATURE_WINDOW, 0.4)) {
    const int64_t sides = r.integer(0, 2);  // left only, right only, both
    if (sides != 1) p.window_left = draw_window_side(r, s.kv_len);
    if (sides != 0) p.window_right = draw_window_side(r, s.kv_len);
  }
  if (want(ATTNCHECK_FEATURE_SOFTCAP, 0.35)) p.softcap = draw_softcap(r, o.families);
  if ((broadcast_bias && (f & ATTNCHECK_FEATURE_BIAS)) || want(ATTNCHECK_FEATURE_BIAS, 0.4)) {
    p.bias_broadcast = draw_broadcast(r, dense_ok);
    if (broadcast_bias) p.bias_broadcast.per_batch = false;  // one bias for every sequence: stride 0
    p.bias = draw_bias(r, p.dtype, stored_extents(s, p.bias_broadcast), o.families);
    if ((!p.q_lens.empty() || !p.kv_lens.empty()) && r.chance(0.5)) poison_bias_padding(p);
  }
  if (want(ATTNCHECK_FEATURE_ALIBI, 0.35)) p.alibi_slopes = draw_alibi(r, s.heads, o.families);
  // ABI v3's slopes per (batch, head): nothing drawn without kAlibiBatchFeature.
  if (!p.alibi_slopes.empty() && !p.is_backward() && want(kAlibiBatchFeature, 0.5)) draw_alibi_batch(r, p, o.families);
  if (want(ATTNCHECK_FEATURE_SINKS, 0.35)) p.sinks = draw_sinks(r, s.heads, o.families);
  if (want(ATTNCHECK_FEATURE_LSE, 0.5)) p.lse_requested = true;
  // Last, so that the forward part of a backward problem is the forward
  // problem the same seed draws without the backward bit.
  if (want(kBackwardFeature, 0.4)) {
    draw_dout(o, r, p);
    if (want(ATTNCHECK_FEATURE_STRIDES, 0.45)) draw_gradient_layouts(r, p.layouts);
  }
  // ABI v3's paging, then its packing, after everything (forward problems
  // only: backward is never called for paged calls, packed gradients are not
  // laid out yet); nothing drawn without kPagedFeature (kPackedFeature).
  if (!p.is_backward() && want(kPagedFeature, 0.5)) draw_paging(r, p);
  if (!p.is_backward() && want(kPackedFeature, 0.5)) draw_packing(r, p);
  // ABI v3's stored K and V formats, last (padded dense keys only: after the
  // packing, which may leave them so): nothing drawn without kKvFormatsFeature.
  if (!p.is_backward() && want(kKvFormatsFeature, 0.7)) draw_kv_formats(r, p, o.kv_formats);
  // The declared numerics that apply to the call, and q within their precondition (numerics_draws.h).
  apply_declared_numerics(p, o.numerics);
  // ABI v3's V as a view of K (MLA), last: v made k's first channels, whatever
  // the keys' storage (padded, packed, paged) and format (V takes K's).
  if (!p.is_backward() && want(kVViewFeature, 0.5)) draw_v_view(o, r, p);
  // ABI v3's K and V expanded, last (padded keys in the dtype, forward only):
  // nothing drawn without kBroadcastKvFeature.
  if (want(kBroadcastKvFeature, 0.5)) draw_kv_broadcast(r, p);
}

template void draw_kv_heads(RandomChoices&, int64_t, Shape&, bool);
template void draw_kv_heads(ByteChoices&, int64_t, Shape&, bool);
template Broadcast draw_broadcast(RandomChoices&, bool);
template Broadcast draw_broadcast(ByteChoices&, bool);
template void draw_late_features(const GenOptions&, bool, RandomChoices&, Problem&, bool);
template void draw_late_features(const GenOptions&, bool, ByteChoices&, Problem&, bool);

}  // namespace attncheck::gen
