// split_consistency: for an implementation that returns the log-sum-exp, the
// keys split in two disjoint parts by masks give two calls whose outputs,
// merged by their lse, agree with the whole call within the bound derived
// from the three calls' own oracle bounds (docs/tolerance.md, "Split
// consistency"). This is the identity split-KV, flash-decoding and ring
// attention merge partial results by: with L1, L2 the exact lse of the two
// parts of a row and O1, O2 their outputs [value_dim],
//   O = a O1 + (1 - a) O2,   a = e^L1 / (e^L1 + e^L2) = sigmoid(L1 - L2),
//   L = log(e^L1 + e^L2) = max(L1, L2) + log1p(e^-|L1 - L2|).
// A row that sees no key of one part is that of the other part, exactly.
//
// Two splits per case, each the same for every row and head (an extra mask,
// ANDed with the case's own; broadcast over the axes the case's mask is):
// - contiguous: keys [0, t_b) and [t_b, Lk) of batch b, t_b a drawn multiple
//   of kTileKeys (any point of a shorter row), so that whole key tiles of
//   every query block are hidden: where split-KV partitions and the
//   block-sparse skipping of tiles no row sees live;
// - a partition in alternating runs of 1 to 3 kTileKeys keys from key 0: both
//   parts have holes and hidden whole tiles, leading ones included.
// Both are drawn from the case's fingerprint, so a case replays and shrinks to
// the same calls. A case is judged when some row sees keys on both sides of a
// split (the merge itself is exercised).
//
// The bound (derivation in docs/tolerance.md, "Split consistency"): the
// oracle bounds each call, |o - O| <= b, |l - L| <= bl for the whole call and
// b1, bl1, b2, bl2 for the parts (rows the parts see nothing of are handled
// exactly). With x = l1 - l2 the computed lse difference and a = sigmoid(x):
//   merged - O = a (o1 - O1) + (1 - a)(o2 - O2) + (a - A)(O1 - O2), A = sigmoid(L1 - L2),
// and L1 - L2 lies within D = bl1 + bl2 of x, so |a - A| <= da =
// max(sigmoid(x + D) - a, a - sigmoid(x - D)) (sigmoid is increasing), and
// |O1 - O2| <= |o1 - o2| + b1 + b2. Hence, elementwise,
//   |o - merged| <= b + a b1 + (1 - a) b2 + da (|o1 - o2| + b1 + b2) + r_o.
// log-sum-exp is increasing in both arguments, so L lies between
// logaddexp(l1 - bl1, l2 - bl2) and logaddexp(l1 + bl1, l2 + bl2), which are
// the merged lse minus log(a e^-bl1 + (1 - a) e^-bl2) and plus
// log(a e^bl1 + (1 - a) e^bl2):
//   |l - merged lse| <= bl + dl + r_l, dl the larger of the two logs.
// r_o and r_l are the merge's own roundings in long double (u = 2^-64): each
// weight sigmoid(+-x) is within (|x| + 4) u relative (exp of the exact float
// difference, 1 + e, the division), the weighted sum adds 2 u, so
// r_o = 2 (|x| + 6) u (a |o1| + (1 - a)|o2|), and
// r_l = 2 u (|max(l1, l2)| + |x| + 6); the 2 covers second order. No
// tolerance is tuned: every term is a bound the oracle derived or the merge's
// arithmetic.
//
// Catches: an lse inconsistent with the output (wrong base, offset, the max
// not added back, an extra term), a split-KV merge or a block-sparse skip of
// hidden key tiles that gets the running max, sum or lse of a skipped tile
// wrong, a kernel whose lse or output depends on which whole tiles a mask
// hides. Cannot catch: a fault that every call makes alike and that keeps the
// merge identity (a wrong scale shifts the three calls consistently only
// approximately, and matches_oracle catches it); sinks (a sink belongs to
// every part: the law does not draw them; sink_equals_extra_key judges them).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "gen/fast_rng.h"
#include "law_framework/law_support.h"
#include "problem/number_text.h"
#include "problem/transforms.h"

namespace attncheck {
namespace {

// Keys per tile the splits align to: the smallest key tile of common kernels.
constexpr int64_t kTileKeys = 16;
constexpr long double kU = 0x1p-64L;  // long double's unit roundoff

// A split of the keys: in_a[b * kv_len + j] is 1 where key j of batch b goes to part A.
struct Split {
  std::string what;           // "keys 0..31 | 32..71 (contiguous)"
  std::vector<uint8_t> in_a;  // [batch][kv_len]
};

int64_t draw(gen::FastRng& rng, int64_t lo, int64_t hi) {  // uniform in [lo, hi]
  return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
}

// Part A = keys [0, t_b) of each batch b, part B the rest.
Split contiguous_split(const Problem& p, gen::FastRng& rng) {
  const Shape& s = p.shape;
  Split sp;
  sp.in_a.assign(s.batch * s.kv_len, 0);
  std::ostringstream what;
  what << "keys [0, t) and [t, Lk) with t =";
  for (int64_t b = 0; b < s.batch; ++b) {
    const int64_t n = p.kv_len_of(b);
    int64_t t = n;  // a batch of one key (or none) is all in part A
    if (n > kTileKeys) t = kTileKeys * draw(rng, 1, (n - 1) / kTileKeys);
    else if (n >= 2) t = draw(rng, 1, n - 1);
    std::fill_n(sp.in_a.begin() + b * s.kv_len, t, 1);
    what << (b ? ", " : " ") << t;
  }
  if (s.batch > 1) what << " (batch 0, 1, ...)";
  sp.what = what.str();
  return sp;
}

// Alternating runs of 1 to 3 tiles' worth of keys, part A first.
Split run_partition(const Problem& p, gen::FastRng& rng) {
  const Shape& s = p.shape;
  Split sp;
  sp.in_a.assign(s.batch * s.kv_len, 0);
  std::ostringstream what;
  what << "runs of keys alternating between the parts:";
  bool a = true;
  int64_t named = 0;
  for (int64_t j = 0; j < s.kv_len; a = !a) {
    const int64_t len = std::min(draw(rng, 1, 3 * kTileKeys), s.kv_len - j);
    if (a)
      for (int64_t b = 0; b < s.batch; ++b) std::fill_n(sp.in_a.begin() + b * s.kv_len + j, len, 1);
    if (named < 6) what << (named ? ", " : " ") << (a ? "A " : "B ") << j << ".." << j + len - 1;
    else if (named == 6) what << ", ...";
    ++named;
    j += len;
  }
  sp.what = what.str();
  return sp;
}

// p with the keys of one side of the split hidden as well (a mask ANDed with
// p's own, broadcast over the heads and rows where p's is), the lse asked for.
Problem part_of(const Problem& p, const Split& sp, bool side_a) {
  const Shape& s = p.shape;
  Problem r = p;
  r.lse_requested = true;
  const Broadcast how{true, p.has_mask() && p.mask_broadcast.per_head, p.has_mask() && p.mask_broadcast.per_row};
  r.mask_broadcast = how;
  r.mask.assign(how.size(s), 0);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < (how.per_head ? s.heads : 1); ++h)
      for (int64_t i = 0; i < (how.per_row ? s.q_len : 1); ++i)
        for (int64_t j = 0; j < s.kv_len; ++j)
          r.mask[how.at(s, b, h, i, j)] =
              p.mask_allows(b * s.heads + h, i, j) && (sp.in_a[b * s.kv_len + j] != 0) == side_a;
  return r;
}

long double sigmoid(long double x) {
  return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x));
}

// One call and its oracle.
struct Call {
  Problem p;
  Outcome o;
  OracleResult r;
};

// The worst disagreement seen, for the message.
struct Worst {
  bool lse = false;           // an lse row, else an output element
  int64_t at = -1;            // flat index (output element, or row)
  double whole = 0, merged = 0, tol = 0;
  std::string split;          // which split
  double l1 = 0, l2 = 0;      // the parts' lse of that row (NaN: the part sees nothing of it)
};

// Compares the whole call with the merge of one split's two parts, row by
// row; `both` counts the rows that see keys in both parts.
void judge_split(const Call& whole, const Call& a, const Call& b, const std::string& split, Tally& tally,
                 Worst& worst, int64_t& both) {
  const Problem& p = whole.p;
  const Shape& s = p.shape;
  const int64_t dv = s.value_dim;
  auto check = [&](bool lse, int64_t at, double w, long double merged, long double tol, double l1, double l2) {
    if (!std::isfinite(static_cast<double>(tol))) return;
    tally.judge();
    const long double d = std::fabs(static_cast<long double>(w) - merged);
    if (w == merged || d <= tol) return;
    const double ratio = std::isnan(static_cast<double>(d)) ? INFINITY : (tol > 0 ? static_cast<double>(d / tol) : INFINITY);
    if (tally.record_worst(at, ratio))
      worst = {lse, at, w, static_cast<double>(merged), static_cast<double>(tol), split, l1, l2};
  };
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      if (!p.row_sees_any_key(bh, i)) continue;  // padding or no key: nothing to merge
      const bool in_a = a.p.row_sees_any_key(bh, i), in_b = b.p.row_sees_any_key(bh, i);
      const int64_t row = bh * s.q_len + i;
      const double lw = whole.o.lse[row], blw = whole.r.lse_bound[row];
      if (!(in_a && in_b)) {
        // One part holds every key the row sees: it is the whole row, exactly.
        const Call& only = in_a ? a : b;
        const double lo = only.o.lse[row];
        for (int64_t c = 0; c < dv; ++c) {
          const int64_t k = p.out_at(bh, i, c);
          check(false, k, whole.o.out[k], only.o.out[k], static_cast<long double>(whole.r.bound[k]) + only.r.bound[k],
                in_a ? lo : NAN, in_b ? lo : NAN);
        }
        check(true, row, lw, lo, static_cast<long double>(blw) + only.r.lse_bound[row], in_a ? lo : NAN,
              in_b ? lo : NAN);
        continue;
      }
      ++both;
      const long double l1 = a.o.lse[row], l2 = b.o.lse[row];
      const long double bl1 = a.r.lse_bound[row], bl2 = b.r.lse_bound[row];
      if (!std::isfinite(static_cast<double>(bl1 + bl2))) continue;  // a part's lse is not judged: neither is the merge
      if (!std::isfinite(static_cast<double>(l1)) || !std::isfinite(static_cast<double>(l2))) {
        // A part that sees keys of the row, with a finite bound, returned no usable lse: nothing merges.
        check(true, row, lw, NAN, 0, static_cast<double>(l1), static_cast<double>(l2));
        continue;
      }
      const long double x = l1 - l2, wa = sigmoid(x), wb = sigmoid(-x), D = bl1 + bl2;
      // sigmoid(y) - sigmoid(x) = sigmoid(y) sigmoid(-x) (1 - e^(x - y)): no cancellation where a is near 0 or 1.
      const long double da = -std::expm1(-D) * std::max(sigmoid(x + D) * wb, wa * sigmoid(D - x));
      for (int64_t c = 0; c < dv; ++c) {
        const int64_t k = p.out_at(bh, i, c);
        const long double o1 = a.o.out[k], o2 = b.o.out[k], b1 = a.r.bound[k], b2 = b.r.bound[k];
        const long double merged = wa * o1 + wb * o2;
        const long double r_o = 2 * (std::fabs(x) + 6) * kU * (wa * std::fabs(o1) + wb * std::fabs(o2));
        const long double tol = whole.r.bound[k] + wa * b1 + wb * b2 + da * (std::fabs(o1 - o2) + b1 + b2) + r_o;
        check(false, k, whole.o.out[k], merged, tol, static_cast<double>(l1), static_cast<double>(l2));
      }
      const long double top = std::max(l1, l2);
      const long double merged = top + std::log1p(std::exp(-std::fabs(x)));
      const long double up = std::log1p(wa * std::expm1(bl1) + wb * std::expm1(bl2));
      const long double down = -std::log1p(wa * std::expm1(-bl1) + wb * std::expm1(-bl2));
      const long double r_l = 2 * kU * (std::fabs(top) + std::fabs(x) + 6);
      check(true, row, lw, merged, blw + std::max(up, down) + r_l, static_cast<double>(l1), static_cast<double>(l2));
    }
}

std::string describe(const Problem& p, const Worst& w) {
  std::ostringstream m;
  if (w.lse) {
    m << "lse of " << output_row(p, w.at / p.shape.q_len, w.at % p.shape.q_len) << ": "
      << compared_values("whole call", w.whole, "merged", w.merged, DType::f32, w.tol);
  } else {
    m << "output " << output_element(p, w.at) << ": "
      << compared_values("whole call", w.whole, "merged", w.merged, p.dtype, w.tol);
  }
  auto part = [](double l) { return std::isnan(l) ? std::string("sees no key") : "lse " + num(l); };
  m << " (part A " << part(w.l1) << ", part B " << part(w.l2) << "; split: " << w.split << ")";
  return m.str();
}

}  // namespace

Law law_split_consistency() {
  Law law;
  law.name = "split_consistency";
  // The work cap of its cases (GenOptions::case_calls): the whole call and two splits of two calls each.
  law.tailor = [](GenOptions& g) { g.case_calls = 5; };
  law.statement = "the keys split in two by masks: the two calls merged by their lse agree with the whole call";
  // Sinks belong to every part and would be counted twice: not drawn.
  law.features = kAllFeatures & ~ATTNCHECK_FEATURE_SINKS;
  // The parts are masked calls: an implementation without masks is skipped, never passed.
  law.required = ATTNCHECK_FEATURE_LSE | ATTNCHECK_FEATURE_MASK;
  law.cheap = false;
  law.check = [](Implementation& impl, const Problem& base) {
    if (!base.lse_requested) return Verdict::not_applicable("the call asks for no lse");
    if (!base.sinks.empty()) return Verdict::not_applicable("the call has sinks, which every part would count");
    Call whole{base, impl.run(base), {}};
    if (auto bad = unusable(whole.o)) return *bad;
    whole.r = oracle(base);
    gen::FastRng rng(problem_fingerprint(base));
    const Split splits[] = {contiguous_split(base, rng), run_partition(base, rng)};
    Tally tally;
    Worst worst;
    int64_t both = 0;
    std::vector<Call> parts;
    for (const Split& sp : splits) {
      for (bool side_a : {true, false}) {
        Call c{part_of(base, sp, side_a), {}, {}};
        c.o = impl.run(c.p);
        if (auto bad = unusable(c.o)) return *bad;
        c.r = oracle(c.p);
        parts.push_back(std::move(c));
      }
      const Call& a = parts[parts.size() - 2];
      const Call& b = parts.back();
      judge_split(whole, a, b, sp.what, tally, worst, both);
      if (tally.violations > 0) {
        // The whole call first: the case itself, which replays the same splits.
        std::ostringstream m;
        m << tally.violations << " value(s) of the whole call differ from its two parts merged by their lse beyond "
          << "the bound; worst " << describe(base, worst);
        auto hidden = [&](const char* part) {
          return std::string("the case with the keys of part ") + part + " hidden from every row by a mask (split: " +
                 sp.what + ")";
        };
        return Verdict::fail(m.str()).on({{"whole", "", base}, {"part A", hidden("B"), a.p}, {"part B", hidden("A"), b.p}});
      }
    }
    if (both == 0) return Verdict::not_applicable("no row sees keys on both sides of either split");
    if (auto settled = tally.settled("no value of the call is judged by the oracle's bound")) return *settled;
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
