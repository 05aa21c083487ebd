// causal_prefix_consistency: under a causal rule, a query row's output depends
// only on the keys the rule lets it see; changing every key and value from a
// cut t onwards leaves each row whose horizon ends before t unchanged.
//
// A problem without a causal rule is given top_left. The cut t lies inside the
// range of the rows' horizons, so one row's horizon ends exactly at t: the row
// that would see key t if the boundary were one late.
//
// Catches: a causal boundary off by one, the rule ignored, bottom_right used
// where top_left was asked (when kv_len > q_len), tiles that read keys past the
// horizon into the row's max or sum. Cannot catch: faults inside the visible
// prefix (wrong scale, wrong softmax), which change both runs alike.
#include <cmath>
#include <sstream>

#include "law_framework/law_support.h"

namespace attncheck {

namespace {

// A different finite value of the dtype, not too large to stay finite in sums.
double altered(DType t, double x) {
  const double y = round_to(t, -2 * x + 1);
  return std::isfinite(y) && std::abs(y) <= max_finite(t) / 4 ? y : -x;
}

}  // namespace

Law law_causal_prefix_consistency() {
  Law law;
  law.name = "causal_prefix_consistency";
  law.statement = "under a causal rule, changing keys and values a row cannot see leaves that row's output unchanged";
  law.check = [](Implementation& impl, const Problem& base) {
    Problem p = base;
    if (p.causal == Causal::none) p.causal = Causal::top_left;
    const Shape& s = p.shape;
    // Cut t: keys [t, kv_len) change. Horizons run from horizon(0) to horizon(q_len-1).
    const int64_t lo = std::max<int64_t>(1, p.causal_key_end(0));
    const int64_t hi = std::min<int64_t>(s.kv_len - 1, p.causal_key_end(s.q_len - 1));
    if (lo > hi) return Verdict::not_applicable("no query row's causal horizon ends before the last key");
    const int64_t t = (lo + hi) / 2;

    Problem changed = p;
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t j = t; j < s.kv_len; ++j) {
        for (int64_t d = 0; d < s.head_dim; ++d) changed.k[p.k_at(bh, j, d)] = altered(p.dtype, p.k[p.k_at(bh, j, d)]);
        for (int64_t c = 0; c < s.value_dim; ++c) changed.v[p.v_at(bh, j, c)] = altered(p.dtype, p.v[p.v_at(bh, j, c)]);
      }

    std::vector<double> before, after;
    if (auto bad = run_for(impl, p, before)) return *bad;
    if (auto bad = run_for(impl, changed, after)) return *bad;
    OracleResult ob = oracle(p), oa = oracle(changed);
    // Only rows whose horizon ends at or before t are judged; others get an infinite tolerance.
    int64_t judged = 0;
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = 0; i < s.q_len; ++i) {
        const bool blind = p.causal_key_end(i) <= t;
        judged += blind;
        for (int64_t c = 0; c < s.value_dim; ++c)
          if (!blind) ob.bound[p.out_at(bh, i, c)] = oa.bound[p.out_at(bh, i, c)] = INFINITY;
      }
    if (judged == 0) return Verdict::not_applicable("no query row is blind to the changed keys");
    if (auto m = mismatch(p, before, ob.bound, after, oa.bound, "before", "after")) {
      std::ostringstream os;
      os << "changing keys " << t << ".." << s.kv_len - 1 << " (hidden from rows 0.." << t - 1 - (p.causal_key_end(0) - 1)
         << " by the " << causal_name(p.causal) << " rule) changed those rows: " << *m;
      // p is saved: checked as a case it keeps its causal rule, cut and changed keys.
      return Verdict::fail(os.str()).on(
          {{"before", "", p},
           {"after", "that call with the k and v rows of keys " + std::to_string(t) + ".." +
                         std::to_string(s.kv_len - 1) + " changed",
            changed}});
    }
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
