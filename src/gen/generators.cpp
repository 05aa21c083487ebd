#include "gen/generators.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iterator>

#include "gen/feature_draws.h"
#include "gen/choice_source.h"
#include "problem/transforms.h"
#include "gen/value_draws.h"

namespace attncheck {

namespace {

using gen::draw_tensor;

// A length in [lo, cap]: often a tile boundary (2^k - 1, 2^k, 2^k + 1), often tiny.
template <class C>
int64_t draw_length(C& r, int64_t lo, int64_t cap) {
  static constexpr int64_t kBoundaries[] = {1,    2,    3,    7,    8,    9,    15,    16,    17,    31,   32,
                                            33,   63,   64,   65,   127,  128,  129,   255,   256,   257,  511,
                                            512,  513,  1023, 1024, 1025, 2047, 2048,  2049,  4095,  4096, 4097,
                                            8191, 8192, 8193, 16383, 16384, 16385};
  const double pick = r.unit();
  if (pick < 0.3) {
    // The boundaries in [lo, cap]: a run of the sorted list (no allocation per length).
    const int64_t* first = std::lower_bound(std::begin(kBoundaries), std::end(kBoundaries), lo);
    const int64_t* last = std::upper_bound(first, std::end(kBoundaries), cap);
    if (first < last) return first[r.integer(0, static_cast<int64_t>(last - first) - 1)];
  }
  if (pick < 0.5) return r.integer(lo, std::min(cap, lo + 3));
  return r.integer(lo, cap);
}

// The cap for a dimension at this RapidCheck size (0..100): small first.
int64_t cap_at(int64_t lo, int64_t hi, int size, double factor) {
  const double f = std::clamp(size / 100.0, 0.0, 1.0);
  const int64_t top = static_cast<int64_t>(std::llround(hi * factor));
  return std::max(lo, static_cast<int64_t>(std::llround(lo + f * (top - lo))));
}

template <class C>
std::vector<uint8_t> draw_mask(C& r, const Shape& s) {
  std::vector<uint8_t> m(s.mask_size(), 1);
  const int64_t rows = s.batch * s.heads * s.q_len;
  switch (r.integer(0, 3)) {
    case 0: {  // random density
      const double keep = 0.1 + 0.8 * r.unit();
      for (auto& b : m) b = r.chance(keep);
      break;
    }
    case 1: {  // a few blocks of masked keys
      for (int blocks = static_cast<int>(r.integer(1, 3)); blocks > 0; --blocks) {
        const int64_t r0 = r.integer(0, rows - 1), r1 = r.integer(r0, rows - 1);
        const int64_t c0 = r.integer(0, s.kv_len - 1), c1 = r.integer(c0, s.kv_len - 1);
        for (int64_t i = r0; i <= r1; ++i)
          for (int64_t j = c0; j <= c1; ++j) m[i * s.kv_len + j] = 0;
      }
      break;
    }
    case 2: {  // some rows see nothing
      for (int64_t i = 0; i < rows; ++i)
        if (r.chance(0.3)) std::fill_n(m.begin() + i * s.kv_len, s.kv_len, 0);
      break;
    }
    default: break;  // all visible, but passed as a mask
  }
  return m;
}

// [lo, hi] of a domain intersected with the options' own [min, max], which
// always wins (a law's tailored minimum, a --q-len range).
std::pair<int64_t, int64_t> within(int64_t domain_lo, int64_t domain_hi, int64_t lo, int64_t hi) {
  const int64_t top = std::max(lo, std::min(domain_hi, hi));
  return {std::clamp(domain_lo, lo, top), top};
}

// The options' domain for this case (the options themselves when they list none).
template <class C>
ShapeDomain pick_domain(const GenOptions& o, C& r) {
  if (o.domains.empty()) {
    ShapeDomain d;
    d.max_batch = o.max_batch;
    d.max_heads = o.max_heads;
    d.min_q_len = o.min_q_len, d.max_q_len = o.max_q_len;
    d.min_kv_len = o.min_kv_len, d.max_kv_len = o.max_kv_len;
    return d;
  }
  double total = 0;
  for (const ShapeDomain& d : o.domains) total += d.weight;
  double pick = r.unit() * total;
  for (const ShapeDomain& d : o.domains) {
    if (pick < d.weight) return d;
    pick -= d.weight;
  }
  return o.domains.back();
}

// n rounded up to a multiple of m (down when that passes hi; never below m).
int64_t to_multiple(int64_t n, int64_t m, int64_t hi) {
  if (m <= 1) return n;
  int64_t up = (n + m - 1) / m * m;
  if (up > hi) up = hi / m * m;
  return std::max(up, m);
}

template <class C>
int64_t draw_head_dim(const GenOptions& o, C& r, int size) {
  auto from = [&](auto&& list) -> int64_t {
    std::vector<int64_t> fit;
    for (int64_t d : list)
      if (d >= o.min_head_dim && d <= o.max_head_dim) fit.push_back(d);
    return fit.empty() ? 0 : fit[r.integer(0, static_cast<int64_t>(fit.size()) - 1)];
  };
  if (!o.head_dims.empty()) {
    if (const int64_t d = from(o.head_dims)) return d;
    // None within a law's tailored range: still only sizes the implementation takes.
    return o.head_dims[r.integer(0, static_cast<int64_t>(o.head_dims.size()) - 1)];
  }
  if (o.kernel_head_dim_chance > 0 && r.chance(o.kernel_head_dim_chance))
    if (const int64_t d = from(kKernelHeadDims)) return d;
  return draw_length(r, o.min_head_dim, cap_at(o.min_head_dim, o.max_head_dim, size, o.size_factor));
}

// An explicit scale: the default given explicitly, a power of two around it,
// 0 or negative; with the fuzz targets' families (kSpecials, kRawBits) half
// the time one of their edge values or raw patterns instead (folded finite
// under kFiniteOnly). Without those families not one choice changes.
template <class C>
double draw_scale(const GenOptions& o, C& r, DType t, int64_t head_dim) {
  if ((o.families & (kSpecials | kRawBits)) && r.chance(0.5)) {
    const double x = gen::special_value(r, t);
    return (o.families & kFiniteOnly) ? gen::fold_to_finite(t, x) : x;
  }
  const double c = r.unit();
  double x;
  if (c < 0.4) x = 1.0 / std::sqrt(static_cast<double>(head_dim));
  else if (c < 0.95) x = std::exp2(-6 + 8 * r.unit());
  else x = c < 0.975 ? 0.0 : -std::exp2(-3 + 3 * r.unit());
  return round_to(t, x);
}

template <class C>
Problem draw_problem(const GenOptions& o, C& r, int size) {
  Problem p;
  p.dtype = o.dtypes.empty() ? DType::f32 : o.dtypes[r.integer(0, o.dtypes.size() - 1)];
  const ShapeDomain d = pick_domain(o, r);
  const int ramp = d.ramped ? size : 100;
  Shape& s = p.shape;
  const int64_t max_batch = std::max(o.min_batch, std::min(o.max_batch, d.max_batch));
  const int64_t max_heads = std::max(o.min_heads, std::min(o.max_heads, d.max_heads));
  s.batch = r.integer(o.min_batch, cap_at(o.min_batch, max_batch, size, 1.0));
  s.heads = r.integer(o.min_heads, cap_at(o.min_heads, max_heads, size, 1.0));
  const auto [q_lo, q_hi] = within(d.min_q_len, d.max_q_len, o.min_q_len, o.max_q_len);
  const auto [kv_lo, kv_hi] = within(d.min_kv_len, d.max_kv_len, o.min_kv_len, o.max_kv_len);
  s.q_len = draw_length(r, q_lo, cap_at(q_lo, q_hi, ramp, o.size_factor));
  if (d.q_equals_kv) {
    s.kv_len = std::clamp(s.q_len, kv_lo, kv_hi);
  } else if (d.q_below_kv) {
    const int64_t lo = std::clamp(s.q_len + 1, kv_lo, kv_hi);
    s.kv_len = draw_length(r, lo, std::max(lo, cap_at(lo, kv_hi, ramp, o.size_factor)));
  } else {
    s.kv_len = r.chance(0.3) ? std::clamp(s.q_len, kv_lo, kv_hi)
                              : draw_length(r, kv_lo, cap_at(kv_lo, kv_hi, ramp, o.size_factor));
  }
  s.q_len = to_multiple(s.q_len, o.q_len_multiple, q_hi);
  s.kv_len = to_multiple(s.kv_len, o.kv_len_multiple, kv_hi);
  s.head_dim = draw_head_dim(o, r, size);
  s.value_dim = (o.same_dims || r.chance(0.5))
                    ? s.head_dim
                    : draw_length(r, 1, cap_at(1, o.max_value_dim, size, o.size_factor));
  if (o.causal && (o.features & ATTNCHECK_FEATURE_CAUSAL)) {
    const double c = r.unit();
    p.causal = c < 0.5 ? Causal::none : c < 0.75 ? Causal::top_left : Causal::bottom_right;
    // Chunked prefill: the new queries sit at the end of the keys.
    if (d.q_below_kv && p.causal == Causal::top_left) p.causal = Causal::bottom_right;
  }
  if (o.explicit_scale && r.chance(0.4)) p.scale = draw_scale(o, r, p.dtype, s.head_dim);
  if (o.features & ATTNCHECK_FEATURE_GQA)
    gen::draw_kv_heads(r, max_heads, s, (o.required & ATTNCHECK_FEATURE_GQA) != 0);
  p.q = draw_tensor(r, p.dtype, s.q_size(), o.families, s.head_dim, s.head_dim);
  p.k = draw_tensor(r, p.dtype, s.k_size(), o.families, s.head_dim, s.head_dim);
  p.v = draw_tensor(r, p.dtype, s.v_size(), o.families, s.head_dim, s.value_dim);
  if (o.mask && (o.features & ATTNCHECK_FEATURE_MASK) && d.masks && r.chance(0.5)) {
    // A v2 call sends a broadcast mask with stride 0; a v1 call cannot.
    if (gen::draws_v2(o)) p.mask_broadcast = gen::draw_broadcast(r, true);
    p.mask = draw_mask(r, gen::stored_extents(s, p.mask_broadcast));
  }
  if (gen::draws_v2(o)) gen::draw_late_features(o, d.masks, r, p);
  return p;
}

// ---- shrinking -------------------------------------------------------------

// x rounded to `bits` significant bits (towards zero), keeping the exponent.
double with_bits(double x, int bits) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e;
  const double m = std::frexp(x, &e);  // m in [0.5, 1)
  return std::ldexp(std::trunc(std::ldexp(m, bits)), e - bits);
}

// The significant bits of x, from its leading one to its last one: the
// smallest b with with_bits(x, b) == x (1 for zero). Read off the bits, since
// shrinking asks for every element of every candidate (a loop over b with
// frexp and ldexp was a seventh of the embedded default check's time).
int mantissa_bits(double x) {
  const uint64_t u = std::bit_cast<uint64_t>(x);
  const uint64_t exponent = (u >> 52) & 0x7ff, fraction = u & ((uint64_t{1} << 52) - 1);
  const uint64_t m = exponent ? fraction | (uint64_t{1} << 52) : fraction;  // subnormals have no implicit one
  return m == 0 ? 1 : std::bit_width(m) - std::countr_zero(m);
}

struct Tensor { std::vector<double> Problem::*member; };
// (The bias is empty in a problem without one: no candidates from it.)
// (Nor dout in a forward problem.)
constexpr Tensor kValueTensors[] = {{&Problem::q}, {&Problem::k}, {&Problem::v}, {&Problem::bias}, {&Problem::dout}};

// Elements a shrink step may hold in all its candidates together (each
// candidate is a whole copy of the problem): 32 MB of doubles.
constexpr std::size_t kCandidateElements = 4'000'000;

// Blocks of each tensor set to zero (variant 0) or rounded to integers
// (variant 1): halves, then quarters, ... down to single elements while the
// candidates fit kCandidateElements, every tensor's halves before anyone's
// quarters. A failure that needs a few elements of a tensor too large for
// element-by-element candidates then keeps only those (q [1, 1, 2, 64] kept
// about 80 nonzero values with whole-tensor candidates alone).
void shrink_blocks(const Problem& p, std::size_t total, std::vector<Problem>& out) {
  for (int variant = 0; variant < 2; ++variant) {
    std::size_t budget = std::max<std::size_t>(64, kCandidateElements / std::max<std::size_t>(total, 1));
    const auto simpler = [&](double x) {
      return variant == 0 ? 0.0 : round_to(p.dtype, std::round(x));
    };
    std::size_t largest = 0;
    for (const Tensor& t : kValueTensors) largest = std::max(largest, (p.*t.member).size());
    for (std::size_t blocks = 2; blocks / 2 < largest && budget > 0; blocks *= 2)
      for (const Tensor& t : kValueTensors) {
        const std::vector<double>& src = p.*t.member;
        const std::size_t n = src.size(), size = (n + blocks - 1) / blocks;
        // A tensor already cut to single elements has no finer blocks.
        if (n < 2 || (blocks > 2 && (n + blocks / 2 - 1) / (blocks / 2) == 1)) continue;
        for (std::size_t first = 0; first < n && budget > 0; first += size) {
          const std::size_t end = std::min(n, first + size);
          bool simplifies = false;
          for (std::size_t i = first; i < end && !simplifies; ++i)
            simplifies = value_complexity(simpler(src[i])) < value_complexity(src[i]);
          if (!simplifies) continue;
          Problem c = p;
          std::vector<double>& dst = c.*t.member;
          for (std::size_t i = first; i < end; ++i)
            if (const double y = simpler(src[i]); value_complexity(y) < value_complexity(src[i])) dst[i] = y;
          out.push_back(std::move(c));
          --budget;
        }
      }
  }
}

void shrink_values(const Problem& p, std::vector<Problem>& out) {
  const auto& tensors = kValueTensors;
  // Whole tensors at once first: cheap to try, and usually enough.
  for (const Tensor& t : tensors) {
    const std::vector<double>& src = p.*t.member;
    for (int variant = 0; variant < 4; ++variant) {
      Problem c = p;
      std::vector<double>& dst = c.*t.member;
      bool changed = false;
      for (double& x : dst) {
        // +0 has no simpler value, and every other value's simplest is +0
        // (simpler_values' first offer): asked here without building the list.
        if (x == 0 && !std::signbit(x)) continue;
        if (variant == 0) x = 0.0;                            // everything to zero
        else if (variant == 1) x = round_to(p.dtype, std::round(x));  // integers
        else if (variant == 2) x = round_to(p.dtype, with_bits(x, 2));
        else x = round_to(p.dtype, with_bits(x, 8));
        // Keep only strict simplifications, so shrinking always terminates.
        const double before = src[&x - dst.data()];
        if (!(value_complexity(x) < value_complexity(before))) x = before;
        else changed = true;
      }
      if (changed) out.push_back(std::move(c));
    }
  }
  const std::size_t total = p.q.size() + p.k.size() + p.v.size() + p.bias.size() + p.dout.size();
  // Then blocks, coarse to fine: zeros, then integers.
  shrink_blocks(p, total, out);
  // Then element by element, while the problem is small enough for that to be quick.
  if (total > 256) return;
  for (const Tensor& t : tensors) {
    const std::vector<double>& src = p.*t.member;
    for (std::size_t i = 0; i < src.size(); ++i)
      for (double y : simpler_values(src[i], p.dtype)) {
        Problem c = p;
        (c.*t.member)[i] = y;
        out.push_back(std::move(c));
      }
  }
}

}  // namespace

int value_complexity(double x) {
  if (x == 0) return std::signbit(x) ? 1 : 0;
  if (std::isnan(x)) return 1 << 30;
  if (std::isinf(x)) return (1 << 30) - 1;
  int e;
  std::frexp(x, &e);
  // Fewer mantissa bits first, then a smaller exponent magnitude, then sign.
  return 2 + 4000 * mantissa_bits(x) + 2 * std::min(std::abs(e - 1), 1999) + (std::signbit(x) ? 1 : 0);
}

std::vector<double> simpler_values(double x, DType t) {
  std::vector<double> c;
  const int complexity = value_complexity(x);
  auto offer = [&](double y) {
    y = round_to(t, y);
    if (!(value_complexity(y) < complexity)) return;
    if (std::find(c.begin(), c.end(), y) == c.end()) c.push_back(y);
  };
  if (x == 0 && !std::signbit(x)) return c;
  offer(0.0);
  if (std::isnan(x)) return c;
  offer(1.0);
  if (std::isinf(x)) { offer(std::copysign(max_finite(t), x)); return c; }
  // Small integers of its sign: -1 for -0.7, 2 for 1.6.
  offer(std::copysign(1.0, x));
  offer(std::round(x));
  offer(std::trunc(x));
  for (int b : {1, 2, 4, 8}) offer(with_bits(x, b));
  if (std::signbit(x)) offer(-x);
  return c;
}

std::vector<Problem> shrink_problem(const Problem& p, const GenOptions& o) {
  std::vector<Problem> out;
  const Shape& s = p.shape;
  auto add_slice = [&](int64_t nb, int64_t nh, int64_t q0, int64_t nq, int64_t k0, int64_t nk, int64_t hd, int64_t vd) {
    nb = std::max(nb, std::min(o.min_batch, s.batch));
    nh = std::max(nh, std::min(o.min_heads, s.heads));
    nq = std::max(nq, std::min(o.min_q_len, s.q_len));
    q0 = std::min(q0, s.q_len - nq);
    nk = std::max(nk, std::min(o.min_kv_len, s.kv_len));
    k0 = std::min(k0, s.kv_len - nk);
    hd = std::max(hd, std::min(o.min_head_dim, s.head_dim));
    if (o.same_dims && s.value_dim == s.head_dim) vd = hd;
    // The six extents (a grouped problem cut to all its heads keeps its kv heads).
    if (nb == s.batch && nh == s.heads && nq == s.q_len && nk == s.kv_len && hd == s.head_dim && vd == s.value_dim)
      return;
    out.push_back(restricted(p, {nb, nh, q0, nq, k0, nk, hd, vd}));
  };
  // Shape: the most drastic cuts first.
  add_slice(1, 1, 0, 1, 0, 1, 1, 1);
  if (s.batch > 1) { add_slice(1, s.heads, 0, s.q_len, 0, s.kv_len, s.head_dim, s.value_dim);
                     add_slice(s.batch - 1, s.heads, 0, s.q_len, 0, s.kv_len, s.head_dim, s.value_dim); }
  if (s.heads > 1) { add_slice(s.batch, 1, 0, s.q_len, 0, s.kv_len, s.head_dim, s.value_dim);
                     add_slice(s.batch, s.heads - 1, 0, s.q_len, 0, s.kv_len, s.head_dim, s.value_dim); }
  if (s.q_len > 1) {
    add_slice(s.batch, s.heads, 0, 1, 0, s.kv_len, s.head_dim, s.value_dim);
    add_slice(s.batch, s.heads, s.q_len - 1, 1, 0, s.kv_len, s.head_dim, s.value_dim);
    add_slice(s.batch, s.heads, 0, (s.q_len + 1) / 2, 0, s.kv_len, s.head_dim, s.value_dim);
    add_slice(s.batch, s.heads, 0, s.q_len - 1, 0, s.kv_len, s.head_dim, s.value_dim);
    add_slice(s.batch, s.heads, 1, s.q_len - 1, 0, s.kv_len, s.head_dim, s.value_dim);
  }
  if (s.kv_len > 1) {
    add_slice(s.batch, s.heads, 0, s.q_len, 0, 1, s.head_dim, s.value_dim);
    add_slice(s.batch, s.heads, 0, s.q_len, 0, (s.kv_len + 1) / 2, s.head_dim, s.value_dim);
    add_slice(s.batch, s.heads, 0, s.q_len, s.kv_len / 2, s.kv_len - s.kv_len / 2, s.head_dim, s.value_dim);
    add_slice(s.batch, s.heads, 0, s.q_len, 0, s.kv_len - 1, s.head_dim, s.value_dim);
    add_slice(s.batch, s.heads, 0, s.q_len, 1, s.kv_len - 1, s.head_dim, s.value_dim);
  }
  if (s.head_dim > 1) {
    add_slice(s.batch, s.heads, 0, s.q_len, 0, s.kv_len, 1, s.value_dim);
    add_slice(s.batch, s.heads, 0, s.q_len, 0, s.kv_len, (s.head_dim + 1) / 2, s.value_dim);
    add_slice(s.batch, s.heads, 0, s.q_len, 0, s.kv_len, s.head_dim - 1, s.value_dim);
  }
  if (s.value_dim > 1) {
    add_slice(s.batch, s.heads, 0, s.q_len, 0, s.kv_len, s.head_dim, 1);
    add_slice(s.batch, s.heads, 0, s.q_len, 0, s.kv_len, s.head_dim, (s.value_dim + 1) / 2);
    add_slice(s.batch, s.heads, 0, s.q_len, 0, s.kv_len, s.head_dim, s.value_dim - 1);
  }
  // Features: no mask, no causal rule, the default scale.
  if (p.has_mask()) { Problem c = p; c.mask.clear(); out.push_back(std::move(c)); }
  if (p.causal != Causal::none) {
    Problem c = p; c.causal = Causal::none; out.push_back(std::move(c));
    if (p.causal == Causal::bottom_right) { Problem t = p; t.causal = Causal::top_left; out.push_back(std::move(t)); }
  }
  if (!std::isnan(p.scale)) { Problem c = p; c.scale = std::nan(""); out.push_back(std::move(c)); }
  // The v2 fields: dropped, then simpler (nothing for a v1 problem).
  gen::shrink_features(p, out);
  gen::shrink_gradients(p, o.required, out);
  shrink_values(p, out);
  // Mask entries back to visible, one at a time, while small.
  if (p.has_mask() && p.mask.size() <= 64)
    for (std::size_t i = 0; i < p.mask.size(); ++i)
      if (!p.mask[i]) { Problem c = p; c.mask[i] = 1; out.push_back(std::move(c)); }
  // A packed or paged case: the v2 shrinks know nothing of slots (a length
  // grown past its slot) or of aliased pages (one reader's key changed alone);
  // those candidates are dropped, the packing's and paging's own kept.
  if (p.packed() || p.paged())
    out.erase(std::remove_if(out.begin(), out.end(), [](const Problem& c) { return !c.inconsistency().empty(); }),
              out.end());
  return out;
}

Problem sample_problem(const GenOptions& options, uint64_t seed, int size) {
  gen::RandomChoices choices(seed);
  return draw_problem(options, choices, size);
}

Problem draw_problem_from(const GenOptions& options, gen::ByteChoices& choices, int size) {
  return draw_problem(options, choices, size);
}

Problem problem_from_bytes(const GenOptions& options, const uint8_t* data, std::size_t size) {
  gen::ByteChoices choices(data, size);
  return draw_problem(options, choices, 100);
}

}  // namespace attncheck
