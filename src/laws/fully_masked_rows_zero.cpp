// fully_masked_rows_zero: a query row that sees no key (every key masked, or
// hidden by a bottom_right rule when q_len > kv_len) outputs exactly zeros:
// not NaN, not the mean of the masked values, not stale memory.
//
// Two problems are built from the generated one: (1) its own mask with every
// third row (and row 0 of each head) fully masked; (2) when q_len >= 2, the
// bottom_right rule with the keys cut to fewer than q_len, which leaves the
// first rows with an empty causal window and no mask at all.
//
// Catches: 0/0 from a softmax over only -inf logits (NaN), a finite mask bias
// (-1e9) that turns an empty row into the uniform mean of masked values, -inf
// max minus -inf max (NaN), empty rows skipped and left unwritten or holding a
// previous row, an empty causal window mishandled by bottom_right alignment.
// Cannot catch: anything about rows that see at least one key.
#include <cmath>
#include <sstream>

#include "law_framework/law_support.h"
#include "problem/transforms.h"

namespace attncheck {

namespace {

// Fails when a row of `p` that sees no key is not all zeros in `out`.
std::optional<std::string> nonzero_empty_row(const Problem& p, const std::vector<double>& out, int64_t& empty) {
  const Shape& s = p.shape;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      if (p.row_sees_any_key(bh, i)) continue;
      ++empty;
      for (int64_t c = 0; c < s.value_dim; ++c) {
        const double x = out[p.out_at(bh, i, c)];
        if (x == 0) continue;
        std::ostringstream m;
        m << "row " << output_row(p, bh, i) << " sees no key and ";
        if (std::isnan(x)) m << "is NaN";
        else m << "outputs " << num(x) << " at c=" << c;
        m << "; expected zeros (" << p.header() << ")";
        return m.str();
      }
    }
  return std::nullopt;
}

}  // namespace

Law law_fully_masked_rows_zero() {
  Law law;
  law.name = "fully_masked_rows_zero";
  law.statement = "a query row that sees no key outputs exactly zeros";
  law.check = [](Implementation& impl, const Problem& base) {
    const Shape& s = base.shape;
    // Each call with how it came from the case (a failure names the one it was seen on).
    std::vector<LawCall> cases;
    cases.push_back({"rows 0, 3, 6, ... masked", "the case with every third query row (0, 3, ...) masked whole",
                     with_mask_anded(base, [](int64_t, int64_t i, int64_t) { return i % 3 != 0; })});
    if (s.q_len >= 2) {
      Problem late = with_keys(base, 0, std::min(s.kv_len, s.q_len - 1));
      late.mask.clear();
      late.causal = Causal::bottom_right;
      cases.push_back({"fewer keys than queries, bottom-right",
                       "the case cut to its first " + std::to_string(late.shape.kv_len) +
                           " key(s), with no mask and the bottom-right causal rule, so its first rows see no key",
                       std::move(late)});
    }
    int64_t empty = 0;
    for (const LawCall& c : cases) {
      std::vector<double> out;
      if (auto bad = run_for(impl, c.problem, out)) return *bad;
      if (auto m = nonzero_empty_row(c.problem, out, empty)) return Verdict::fail(*m).on({c});
    }
    if (empty == 0) return Verdict::not_applicable("no row sees nothing");
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
