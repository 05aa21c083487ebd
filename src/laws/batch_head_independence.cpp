// batch_head_independence: every (batch, head) is its own attention, so each
// one computed alone (batch = heads = 1) equals its slice of the batched call.
//
// Catches: batch or head stride mix-ups (another head's K, V or mask read,
// output written to the wrong head), state carried from one head to the next,
// a batched code path that differs from the single-head one.
// Cannot catch: faults every head shares (wrong scale, no max subtraction,
// mask or causal errors, a dropped key), nor anything with batch * heads == 1.
#include <sstream>

#include "law_framework/law_support.h"
#include "problem/transforms.h"

namespace attncheck {

Law law_batch_head_independence() {
  Law law;
  law.name = "batch_head_independence";
  law.statement = "each (batch, head) computed alone equals its slice of the batched call";
  // At least two heads, so there is a slice to mix up; the batch varies freely.
  law.tailor = [](GenOptions& g) { g.min_heads = std::max<int64_t>(g.min_heads, 2); g.max_heads = std::max<int64_t>(g.max_heads, 2); };
  law.check = [](Implementation& impl, const Problem& p) {
    const Shape& s = p.shape;
    if (s.batch * s.heads == 1) return Verdict::not_applicable("batch * heads == 1: nothing to separate");
    CheckedRun run;
    if (auto bad = run_with_oracle(impl, p, run)) return *bad;
    const std::vector<double>& out = run.out;
    const OracleResult& o = run.oracle;
    const int64_t per_head = s.q_len * s.value_dim;
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
      const Problem alone = head_alone(p, bh);
      std::vector<double> out_alone;
      if (auto bad = run_for(impl, alone, out_alone)) return *bad;
      const std::vector<double> slice(out.begin() + bh * per_head, out.begin() + (bh + 1) * per_head),
          slice_tol(o.bound.begin() + bh * per_head, o.bound.begin() + (bh + 1) * per_head);
      if (auto m = mismatch(alone, slice, slice_tol, out_alone, oracle(alone).bound, "batched", "alone")) {
        std::ostringstream msg;
        msg << "head [b=" << bh / s.heads << "][h=" << bh % s.heads << "] (element indices within that head): " << *m;
        std::ostringstream d;
        d << "head [b=" << bh / s.heads << "][h=" << bh % s.heads << "] of the case, alone (batch = heads = 1)";
        return Verdict::fail(msg.str()).on({{"batched", "", p}, {"alone", d.str(), alone}});
      }
    }
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
