// grad_values_sum: dV_j = sum_i P_ij dO_i and each row's weights sum to one,
// so sum_j dV_j over the keys of a (batch, kv head) equals the sum of dO over
// the rows of its query heads that see at least one key. One call, on the
// implementation's own gradients. Not with sinks (then each row contributes
// its weights' mass, less than one).
//
// The bound (oracle/grad_rounding.h for the notation). Each dV^_j deviates from
// sum_i P^_ij dO_i (the weights the backward uses) by at most its rounding
// bound (model {false, false}: F sum_i P'_ij gamma |dO_ic| + u |dV^_jc| +
// floor), summed over j. The rest is sum_i (sum_j P^_ij - 1) dO_i, and
// |sum_j P^_ij - 1| <= expm1(rho_vary_i + rho_uniform_i) + gamma: the
// logits' error and the lse's (a backward that recomputes P from its float
// lse), or its own normalisation's rounding. So per value column c:
//   |sum_j dV^_jc - sum_i dO_ic| <= sum_j bound_jc + F sum_i |dO_ic| (expm1(rho_vary_i + rho_uniform_i) + gamma).
//
// Catches: dV from unnormalised weights (exp(z - max) without 1/sum), dV from
// weights of another row or a stale lse, padding or empty rows' dO added in,
// dV of a group from one query head (the group's other heads' dO missing).
// Cannot catch: a permutation of dV among keys, dQ and dK faults, a fault
// that keeps each row's weights summing to one (a wrong scale inside exp).
#include <cmath>
#include <sstream>

#include "law_framework/grad_support.h"
#include "oracle/oracle.h"
#include "problem/number_text.h"

namespace attncheck {

Law law_grad_values_sum() {
  Law law;
  law.name = "grad_values_sum";
  law.statement = "the value gradients of each (batch, kv head) sum to the dout of the rows that see a key";
  law.features = kEveryFeature & ~ATTNCHECK_FEATURE_SINKS;
  law.required = kBackwardFeature;
  law.check = [](Implementation& impl, const Problem& drawn) {
    const Problem p = backward_of(drawn);
    if (!p.sinks.empty()) return Verdict::not_applicable("sinks: the weights of a row sum to less than one");
    GradRun run;
    if (auto bad = run_backward_bounded(impl, p, run, GradErrorModel{false, false})) return *bad;
    const Shape& s = p.shape;
    const GradMagnitudes& m = run.magnitudes;
    const std::vector<double>& dv = run.outcome.dv;
    const int64_t group = s.heads / s.kv_head_count();
    Tally tally;
    std::string worst;
    for (int64_t kv = 0; kv < s.batch * s.kv_head_count(); ++kv) {
      const int64_t b = kv / s.kv_head_count(), first_head = b * s.heads + (kv % s.kv_head_count()) * group;
      std::vector<uint8_t> seen(s.kv_len, 0);
      std::vector<long double> expected(s.value_dim, 0.0L), slack(s.value_dim, 0.0L);
      bool judged = true, any = false;
      int64_t rows = 0;
      for (int64_t bh = first_head; bh < first_head + group; ++bh)
        for (int64_t i = 0; i < s.q_len; ++i) {
          const int64_t r = bh * s.q_len + i;
          if (!m.seen[r]) continue;
          any = true;
          if (!m.judged[r]) { judged = false; continue; }
          ++rows;
          for (int64_t j = 0; j < s.kv_len; ++j) seen[j] |= p.visible(bh, i, j);
          const double mass_error = weights_relative_error(m, r) + m.gamma;
          for (int64_t c = 0; c < s.value_dim; ++c) {
            const double g = p.dout[p.out_at(bh, i, c)];
            expected[c] += g;
            slack[c] += std::abs(g) * mass_error;
          }
        }
      if (!any || !judged) continue;
      for (int64_t c = 0; c < s.value_dim; ++c) {
        long double sum = 0, allowed = kBoundSafetyFactor * slack[c];
        for (int64_t j = 0; j < s.kv_len; ++j) {
          if (!seen[j]) continue;
          sum += dv[p.v_at(kv, j, c)];
          allowed += run.bounds.dv[p.v_at(kv, j, c)];
        }
        if (!std::isfinite(static_cast<double>(allowed))) continue;
        tally.judge();
        // In long double: both sums may be beyond double's range (a dout
        // column of 12 rows near -4.5e307 sums to -5.4e308) and still agree.
        const long double diff = std::abs(sum - expected[c]);
        if (diff <= allowed) continue;
        const double got = static_cast<double>(sum), want = static_cast<double>(expected[c]);
        const double ratio = std::isnan(diff) ? INFINITY : static_cast<double>(diff / allowed);
        if (tally.record_worst(kv * s.value_dim + c, ratio)) {
          const PairText t = pair_text(got, want, p.dtype);
          std::ostringstream os;
          os << "sum_j dv[b=" << b << "][kvh=" << kv % s.kv_head_count() << "][j][c=" << c << "] = " << t.a
             << ", but the dout of the " << rows << " row(s) that see a key sums to " << t.b << "; "
             << difference_text(got, want, p.dtype, static_cast<double>(allowed));
          worst = os.str();
        }
      }
    }
    if (auto v = tally.settled("no (batch, kv head) whose rows are all judged sees a key")) return *v;
    return Verdict::fail(std::to_string(tally.violations) + " value column sum(s) of dv are off; worst: " + worst);
  };
  return law;
}

}  // namespace attncheck
