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
int64_t draw_length(C& r, int64_t lo, int64_t cap, bool log_uniform = false) {
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
  if (log_uniform && cap > lo) {
    // log(length) uniform in [log lo, log cap]: as many cases of 2k to 4k keys as of 16k to 32k.
    const double x = static_cast<double>(std::max<int64_t>(lo, 1)) *
                     std::exp(r.unit() * std::log(static_cast<double>(cap) / std::max<int64_t>(lo, 1)));
    return std::clamp(static_cast<int64_t>(std::llround(x)), lo, cap);
  }
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

// The options' domain for this case (the options themselves when they list
// none): the one whose sizes hold `size` (ShapeDomain::from_size), else one of
// the others by weight.
template <class C>
ShapeDomain pick_domain(const GenOptions& o, C& r, int size) {
  if (o.domains.empty()) {
    ShapeDomain d;
    d.max_batch = o.max_batch;
    d.max_heads = o.max_heads;
    d.min_q_len = o.min_q_len, d.max_q_len = o.max_q_len;
    d.min_kv_len = o.min_kv_len, d.max_kv_len = o.max_kv_len;
    return d;
  }
  const auto banded = [](const ShapeDomain& d) { return d.to_size > d.from_size; };
  for (const ShapeDomain& d : o.domains)
    if (banded(d) && size >= d.from_size && size < d.to_size && (d.size_chance >= 1 || r.chance(d.size_chance)))
      return d;
  double total = 0;
  for (const ShapeDomain& d : o.domains) total += banded(d) ? 0 : d.weight;
  double pick = r.unit() * total;
  for (const ShapeDomain& d : o.domains) {
    if (banded(d)) continue;
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

// max_dim: the domain's cap on head_dim (ShapeDomain::max_dim; 0: none).
template <class C>
int64_t draw_head_dim(const GenOptions& o, C& r, int size, int64_t max_dim) {
  const int64_t top = max_dim > 0 ? std::max(o.min_head_dim, std::min(o.max_head_dim, max_dim)) : o.max_head_dim;
  auto from = [&](auto&& list) -> int64_t {
    std::vector<int64_t> fit;
    for (int64_t d : list)
      if (d >= o.min_head_dim && d <= top) fit.push_back(d);
    return fit.empty() ? 0 : fit[r.integer(0, static_cast<int64_t>(fit.size()) - 1)];
  };
  if (!o.head_dims.empty()) {
    if (const int64_t d = from(o.head_dims)) return d;
    // None within a law's tailored range: still only sizes the implementation takes.
    return o.head_dims[r.integer(0, static_cast<int64_t>(o.head_dims.size()) - 1)];
  }
  if (o.kernel_head_dim_chance > 0 && r.chance(o.kernel_head_dim_chance))
    if (const int64_t d = from(kKernelHeadDims)) return d;
  return draw_length(r, o.min_head_dim, cap_at(o.min_head_dim, top, size, o.size_factor));
}

// ---- the shapes of the public bug reports ------------------------------------
//
// GenOptions::report_shape_chance: one of these, each for a class of reported
// faults, applied to the shape just drawn, within the options' and the
// domain's limits (a kind the limits leave no room for changes nothing).
enum class ReportShape {
  kv_mod_32_is_1,     // kv_len = 1 (mod 32): a last key tile holding one key (tail-tile
                      // masking and out-of-bounds key reads; e.g. kv_len 33, 65, 2049)
  seq_mod_128_is_64,  // q_len (and kv_len where they are equal; kv_len alone in decode) =
                      // 64 (mod 128): a 128-row tile kernel's 64-row remainder path (wrong
                      // results at 192, 320, ...)
  gqa_ratio,          // 28 query heads over 4 kv heads, 5 over 1, 20 over 1: groups of 7,
                      // 5 and 20, not powers of two (kernels assuming heads % 8 == 0 or
                      // group sizes of 2^k, Qwen2-style 28/4)
  report_head_dim,    // 59, 111, 203 (not multiples of 8: vector loads and padding),
                      // 256 (past a kernel's shared-memory plan), 512 and 576 (MLA decode)
  one_query_long_cache,  // q_len 1 against the longest cache the domain allows: the
                         // decode and split-KV paths
  batch_broadcast_bias,  // batch >= 2 with a bias broadcast over the batch (stride 0):
                         // per-batch offsets applied to a shared bias
  count
};
inline constexpr int64_t kReportHeadDims[] = {59, 111, 203, 256, 512, 576};
inline constexpr int64_t kReportGqa[][2] = {{28, 4}, {5, 1}, {20, 1}};

// The largest n <= hi with n = rest (mod m), if it is >= lo; else 0.
int64_t top_congruent(int64_t lo, int64_t hi, int64_t m, int64_t rest) {
  if (hi < rest) return 0;
  const int64_t n = (hi - rest) / m * m + rest;
  return n >= lo ? n : 0;
}

// A length n = rest (mod m) in [lo, hi]: one of the few from the bottom of
// the range or any (so that short rows see it as often as long ones); 0 if none.
template <class C>
int64_t draw_congruent(C& r, int64_t lo, int64_t hi, int64_t m, int64_t rest) {
  const int64_t top = top_congruent(lo, hi, m, rest);
  if (top == 0) return 0;
  const int64_t first = top - (top - std::max(lo, rest)) / m * m;  // the smallest in range
  const int64_t steps = (top - first) / m;
  return first + m * (r.chance(0.5) ? r.integer(0, std::min<int64_t>(steps, 2)) : r.integer(0, steps));
}


// The shape cut until one call's work (call_work) is within the options' cap
// for one call of the case (GenOptions::max_case_work / case_calls; a
// kBackwardWork-th of that where the problem may be a backward one). What
// goes first is what the shape's point needs least: the batch, then head_dim
// and value_dim (halved; not a probe's head_dims list), then heads (to one,
// or two over one kv head where GQA is required), then the lengths (kv_len
// alone for decode, both for prefill), never below the options' minimums nor
// off the probe's multiples; a bug-report head dim or GQA ratio is cut last
// (WorkKeep). A shape within the cap is untouched, so the draws of every
// shape below it are what they were.
// A bug-report shape (`report`) gets at most kReportCallWork a call: about
// what the small domain's largest ordinary draws cost (3 sequences x 3 heads x
// 72 x 72 keys x (72 + 72 + 24)), so that 28 heads or 576 dims make the check
// no slower than the shapes it had.
constexpr int64_t kReportCallWork = int64_t{1} << 23;

// A backward case's share of the cap: its call computes the forward and
// three gradient products, and the gradient oracle judging it costs far more a
// logit than the forward's (one grad_layout_invariance case of a long prefill
// at a third of the forward cap cost 2 s of CPU, the whole law's run 0.6 s
// without it): a 32nd, which leaves decode rows of 32,768 keys and prefill of
// a few hundred rows.
constexpr int64_t kBackwardWork = 32;

// What fit_work cuts last: the point of a bug-report shape (its head dim,
// its heads), else nothing in particular (the order below).
enum class WorkKeep { none, dims, heads };

void fit_work(const GenOptions& o, const ShapeDomain& d, bool report, WorkKeep keep, Shape& s) {
  if (o.max_case_work <= 0) return;
  const bool backward = (o.required & kBackwardFeature) || (o.features & kBackwardFeature);
  int64_t cap = o.max_case_work / std::max<int64_t>(1, o.case_calls) / (backward ? kBackwardWork : 1);
  if (report) cap = std::min(cap, kReportCallWork);
  const auto over = [&] { return call_work(s) > cap; };
  if (!over()) return;
  s.batch = std::max<int64_t>(o.min_batch, 1);
  const bool same = s.value_dim == s.head_dim;
  const auto cut_dims = [&] {
    while (over() && o.head_dims.empty() && s.head_dim > std::max<int64_t>(o.min_head_dim, 1)) {
      s.head_dim = std::max<int64_t>(std::max<int64_t>(o.min_head_dim, 1), s.head_dim / 2);
      if (same || o.same_dims) s.value_dim = s.head_dim;
    }
    while (over() && !(o.same_dims && same) && s.value_dim > 1) s.value_dim /= 2;
  };
  // Heads: as few as the options allow (two, one kv head, where GQA is required).
  const auto cut_heads = [&] {
    const bool grouped = (o.required & ATTNCHECK_FEATURE_GQA) != 0 && s.kv_head_count() < s.heads;
    const int64_t fewest = std::max<int64_t>(o.min_heads, grouped ? 2 : 1);
    if (!over() || s.heads <= fewest) return;
    s.heads = fewest;
    if (s.kv_heads > 0) s.kv_heads = grouped ? 1 : std::min(s.kv_heads, s.heads);
    if (s.kv_heads > 0 && s.heads % s.kv_heads != 0) s.kv_heads = s.heads;
  };
  const auto down = [](int64_t n, int64_t m, int64_t lo) { return std::max(lo, m > 1 ? n / m * m : n); };
  const auto cut_lengths = [&] {
    while (over()) {
      const Shape before = s;
      const double f = static_cast<double>(cap) / static_cast<double>(call_work(s));
      if (d.q_equals_kv || s.q_len == s.kv_len) {
        const int64_t n = static_cast<int64_t>(static_cast<double>(s.q_len) * std::sqrt(f));
        s.q_len = down(std::min(n, s.q_len - 1), o.q_len_multiple, std::max(o.min_q_len, o.min_kv_len));
        s.kv_len = std::max(s.q_len, o.min_kv_len);
      } else {
        const int64_t keys = static_cast<int64_t>(static_cast<double>(s.kv_len) * f);
        s.kv_len = down(std::min(keys, s.kv_len - 1), o.kv_len_multiple, std::max({o.min_kv_len, int64_t{1}}));
        if (d.q_below_kv && s.kv_len <= s.q_len) s.kv_len = std::min(before.kv_len, s.q_len + 1);
        if (call_work(s) > cap && s.q_len > o.min_q_len)
          s.q_len = down(std::max<int64_t>(s.q_len / 2, 1), o.q_len_multiple, std::max<int64_t>(o.min_q_len, 1));
      }
      if (s.q_len == before.q_len && s.kv_len == before.kv_len) return;  // the minimums hold: as small as allowed
    }
  };
  if (keep == WorkKeep::dims) cut_heads(), cut_lengths(), cut_dims();
  else if (keep == WorkKeep::heads) cut_dims(), cut_lengths(), cut_heads();
  else cut_dims(), cut_heads(), cut_lengths();
}

// A long row's keys and values hold at most kLongRowElements elements
// (batch * kv heads * kv_len * (head_dim + value_dim)): drawing them, laying
// them out for the call (and a plugin's copies) and the oracle's pass over
// each key cost by the element, not by the multiply-add, and a probe's head
// dims (128: the rows' dims cap yields to it) made the decode rows 16 times
// larger, a v1 plugin's default check 11 times longer (shapes_head-dim-128:
// 6.7 s to 76 s). At head_dim =
// value_dim = 16 a decode of 32,768 keys holds exactly this; at 128, 4,096.
constexpr int64_t kLongRowElements = int64_t{1} << 20;

void fit_long_row_elements(const GenOptions& o, const ShapeDomain& d, Shape& s) {
  if (d.max_dim <= 0 || o.max_case_work <= 0) return;  // a long-row domain of a profile only
  const int64_t per_key = s.batch * s.kv_head_count() * (s.head_dim + s.value_dim);
  if (per_key * s.kv_len <= kLongRowElements) return;
  const int64_t keys = std::max<int64_t>(kLongRowElements / std::max<int64_t>(per_key, 1), 1);
  const int64_t m = std::max<int64_t>(o.kv_len_multiple, 1);
  s.kv_len = std::max(o.min_kv_len, std::max(keys / m * m, m));
  if (d.q_equals_kv) s.q_len = s.kv_len = std::max(std::min(s.q_len, s.kv_len), std::max(o.min_q_len, o.min_kv_len));
  if (d.q_below_kv && s.q_len >= s.kv_len) s.q_len = std::max<int64_t>(o.min_q_len, s.kv_len - 1);
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

// kNegativeLse: how often a problem of options with that bit gets it, and
// only a problem of at most kNegativeLseWork (call_work): the oracle judges
// such rows on its careful path, row by row in long double (a decode case of
// 2,048 keys there cost a tenth of a second, and a tenth of every law's cases
// of them doubled the check's time); the fault classes show on short rows.
constexpr double kNegativeLseChance = 0.1;
constexpr int64_t kNegativeLseWork = int64_t{1} << 18;

// Very negative row lse (reports: a row whose every visible logit is far
// below -88.7, where exp underflows in f32, is a real row, not an empty one:
// kernels that compute lse as log(sum(exp(s))) without the max get -inf, and
// kernels that tell an empty row by a zero sum or a "max below -88" test
// output zeros or NaN for it; with a mask beside it, the rows that do see
// nothing must still give zeros). K all positive (|N(0,1)| + 0.5), every
// query the constant -a, so that each logit scale * (-a) * sum_d k_jd is at
// most T, T drawn in [-250, -130]: the row's lse is at most T + ln(kv_len).
// False (nothing changed) where the scale is not positive.
template <class C>
bool make_lse_negative(C& r, Problem& p) {
  const double target = -130 - 120 * r.unit();
  const double scale = p.effective_scale();
  for (double& x : p.k) x = round_to(p.dtype, std::abs(r.gaussian()) + 0.5);
  r.note_family(kNegativeLse);
  if (!(scale > 0) || p.k.empty()) return false;
  const int64_t d = p.shape.head_dim;
  double least = INFINITY;  // the smallest row sum of K
  for (std::size_t row = 0; row * d < p.k.size(); ++row) {
    double sum = 0;
    for (int64_t c = 0; c < d; ++c) sum += p.k[row * d + c];
    least = std::min(least, sum);
  }
  // Rounded up in magnitude: every logit stays at or below the target.
  const double a = -target / (scale * least);
  double q = round_to(p.dtype, a);
  if (q < a) q = round_to(p.dtype, a * (1 + 2 * unit_roundoff(p.dtype)));
  if (!std::isfinite(q)) return false;
  std::fill(p.q.begin(), p.q.end(), -q);
  return true;
}

template <class C>
Problem draw_problem(const GenOptions& o, C& r, int size) {
  Problem p;
  p.dtype = o.dtypes.empty() ? DType::f32 : o.dtypes[r.integer(0, o.dtypes.size() - 1)];
  const ShapeDomain d = pick_domain(o, r, size);
  const int ramp = d.ramped ? size : 100;
  Shape& s = p.shape;
  const int64_t max_batch = std::max(o.min_batch, std::min(o.max_batch, d.max_batch));
  const int64_t max_heads = std::max(o.min_heads, std::min(o.max_heads, d.max_heads));
  s.batch = r.integer(o.min_batch, cap_at(o.min_batch, max_batch, size, 1.0));
  s.heads = r.integer(o.min_heads, cap_at(o.min_heads, max_heads, size, 1.0));
  const auto [q_lo, q_hi] = within(d.min_q_len, d.max_q_len, o.min_q_len, o.max_q_len);
  const auto [kv_lo, kv_hi] = within(d.min_kv_len, d.max_kv_len, o.min_kv_len, o.max_kv_len);
  const bool log = d.log_lengths;
  s.q_len = draw_length(r, q_lo, cap_at(q_lo, q_hi, ramp, o.size_factor), log);
  if (d.q_equals_kv) {
    s.kv_len = std::clamp(s.q_len, kv_lo, kv_hi);
  } else if (d.q_below_kv) {
    const int64_t lo = std::clamp(s.q_len + 1, kv_lo, kv_hi);
    s.kv_len = draw_length(r, lo, std::max(lo, cap_at(lo, kv_hi, ramp, o.size_factor)), log);
  } else {
    s.kv_len = r.chance(0.3) ? std::clamp(s.q_len, kv_lo, kv_hi)
                              : draw_length(r, kv_lo, cap_at(kv_lo, kv_hi, ramp, o.size_factor), log);
  }
  // One of the bug reports' shapes now and then (its lengths before the
  // probe's multiples, which win).
  const ReportShape report = o.report_shape_chance > 0 && r.chance(o.report_shape_chance)
                                 ? static_cast<ReportShape>(r.integer(0, static_cast<int64_t>(ReportShape::count) - 1))
                                 : ReportShape::count;
  if (report == ReportShape::kv_mod_32_is_1 && !d.q_equals_kv) {
    const int64_t lo = d.q_below_kv ? std::max(kv_lo, s.q_len + 1) : kv_lo;
    if (const int64_t n = draw_congruent(r, lo, kv_hi, 32, 1)) s.kv_len = n;
  } else if (report == ReportShape::kv_mod_32_is_1) {
    if (const int64_t n = draw_congruent(r, std::max(q_lo, kv_lo), std::min(q_hi, kv_hi), 32, 1)) s.q_len = s.kv_len = n;
  } else if (report == ReportShape::seq_mod_128_is_64) {
    const int64_t hi = d.q_equals_kv ? std::min(q_hi, kv_hi) : d.q_below_kv ? std::min(q_hi, s.kv_len - 1) : q_hi;
    if (const int64_t n = draw_congruent(r, d.q_equals_kv ? std::max(q_lo, kv_lo) : q_lo, hi, 128, 64)) {
      s.q_len = n;
      if (d.q_equals_kv) s.kv_len = n;
    } else if (!d.q_equals_kv) {
      // Decode (q_len 1..8): the sequence is the cache, kv_len = 64 (mod 128).
      const int64_t lo = d.q_below_kv ? std::max(kv_lo, s.q_len + 1) : kv_lo;
      if (const int64_t m = draw_congruent(r, lo, kv_hi, 128, 64)) s.kv_len = m;
    }
  } else if (report == ReportShape::one_query_long_cache && q_lo <= 1 && !d.q_equals_kv) {
    s.q_len = 1;
    s.kv_len = r.integer(std::max(kv_lo, std::max<int64_t>(2, kv_hi / 2)), std::max(kv_lo, kv_hi));
  } else if (report == ReportShape::batch_broadcast_bias && o.max_batch >= 2 && s.batch < 2) {
    s.batch = 2;
  }
  s.q_len = to_multiple(s.q_len, o.q_len_multiple, q_hi);
  s.kv_len = to_multiple(s.kv_len, o.kv_len_multiple, kv_hi);
  s.head_dim = draw_head_dim(o, r, size, d.max_dim);
  if (report == ReportShape::report_head_dim && o.head_dims.empty()) {
    const int64_t top = std::max(o.max_head_dim, o.max_report_head_dim);
    std::vector<int64_t> fit;
    for (int64_t hd : kReportHeadDims)
      if (hd >= o.min_head_dim && hd <= top && (d.max_dim == 0 || hd <= d.max_dim)) fit.push_back(hd);
    if (!fit.empty()) s.head_dim = fit[r.integer(0, static_cast<int64_t>(fit.size()) - 1)];
  }
  const int64_t value_cap = d.max_dim > 0 ? std::min(o.max_value_dim, d.max_dim) : o.max_value_dim;
  s.value_dim = (o.same_dims || r.chance(0.5))
                    ? s.head_dim
                    : draw_length(r, 1, cap_at(1, std::max<int64_t>(1, value_cap), size, o.size_factor));
  if (o.causal && (o.features & ATTNCHECK_FEATURE_CAUSAL)) {
    const double c = r.unit();
    p.causal = c < 0.5 ? Causal::none : c < 0.75 ? Causal::top_left : Causal::bottom_right;
    // Chunked prefill: the new queries sit at the end of the keys.
    if (d.q_below_kv && p.causal == Causal::top_left) p.causal = Causal::bottom_right;
  }
  if (o.explicit_scale && r.chance(0.4)) p.scale = draw_scale(o, r, p.dtype, s.head_dim);
  // The ratios within the options' heads (a profile's max_heads lets 28
  // through; a law's or --heads' narrower range wins), not in a long-row
  // domain (d.max_dim > 0: 28 heads of 32,768 keys is not a few elements a key).
  const auto ratio_fits = [&](const int64_t* ratio) { return ratio[0] >= o.min_heads && ratio[0] <= o.max_heads; };
  const int64_t* ratio = nullptr;
  if (report == ReportShape::gqa_ratio && (o.features & ATTNCHECK_FEATURE_GQA) && d.max_dim == 0) {
    ratio = kReportGqa[r.integer(0, std::size(kReportGqa) - 1)];
    if (!ratio_fits(ratio)) ratio = nullptr;
  }
  if (ratio) {
    s.heads = ratio[0];
    s.kv_heads = ratio[1];
  } else if (o.features & ATTNCHECK_FEATURE_GQA) {
    gen::draw_kv_heads(r, max_heads, s, (o.required & ATTNCHECK_FEATURE_GQA) != 0);
  }
  fit_work(o, d, report != ReportShape::count,
           report == ReportShape::report_head_dim ? WorkKeep::dims : ratio ? WorkKeep::heads : WorkKeep::none, s);
  fit_long_row_elements(o, d, s);
  // The domain's families, where it narrows them (the modifier bits kept).
  const unsigned narrowed = o.families & d.families & ~kFiniteOnly;
  const unsigned families = d.families == 0 || narrowed == 0 ? o.families : narrowed | (o.families & kFiniteOnly);
  p.q = draw_tensor(r, p.dtype, s.q_size(), families, s.head_dim, s.head_dim);
  p.k = draw_tensor(r, p.dtype, s.k_size(), families, s.head_dim, s.head_dim);
  p.v = draw_tensor(r, p.dtype, s.v_size(), families, s.head_dim, s.value_dim);
  const bool mask_allowed = o.mask && (o.features & ATTNCHECK_FEATURE_MASK) && d.masks;
  // Very negative rows (kNegativeLse), masked where masks may be drawn.
  const bool negative = (families & kNegativeLse) && r.chance(kNegativeLseChance) &&
                        call_work(s) <= kNegativeLseWork && make_lse_negative(r, p);
  if (mask_allowed && (negative || r.chance(0.5))) {
    // A v2 call sends a broadcast mask with stride 0; a v1 call cannot.
    if (gen::draws_v2(o)) p.mask_broadcast = gen::draw_broadcast(r, true);
    p.mask = draw_mask(r, gen::stored_extents(s, p.mask_broadcast));
  }
  // batch >= 2 with a bias broadcast over it, where the options allow a bias.
  const bool broadcast_bias = report == ReportShape::batch_broadcast_bias && s.batch >= 2;
  if (gen::draws_v2(o)) gen::draw_late_features(o, d.masks, r, p, broadcast_bias);
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

int64_t call_work(const Shape& s) {
  const int64_t pairs = s.batch * s.heads * s.q_len * s.kv_len;
  return pairs * (s.head_dim + s.value_dim + kExpWork);
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
  // Stored K and V formats likewise (a value made simpler is no code times its scale).
  // V as a view of K likewise (a value of k changed alone is no longer v's).
  // Broadcast K and V likewise (one entry's key changed alone is no longer repeated).
  if (p.packed() || p.paged() || p.kv_formatted() || p.v_view_of_k || p.kv_broadcast())
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
