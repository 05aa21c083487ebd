// grad_key_shift_zero: adding one vector u to every key of a (batch, kv head)
// adds scale q_i . u to every logit of each row that reads it, which softmax
// ignores; so the derivative along that direction, sum_j dK_j . u, is zero for
// every u: sum_j dK_j = 0 over the keys of each (batch, kv head) (summed over
// its query heads with GQA). Judged on the implementation's own gradients,
// one call. Not with a soft-cap (the shift does not pass through tanh as a
// constant) and not with sinks (the sink's logit does not move).
//
// The bound (oracle/grad_rounding.h for the notation). A correct backward's
// dK^_j deviates from scale sum_i dS^_ij Q_i (its own dS^) by at most the
// rounding part of grad_rounding_bounds (no weights or forward error: model
// {false, false}), summed over j. What is left, sum_j scale sum_i dS^_ij Q_i =
// scale sum_i Q_i (sum_j dS^_ij), is exactly zero for exact weights; with the
// weights the backward uses, P^ = P (1 + rho_uniform)(1 + rho'_j), it is
//   scale sum_i Q_i (1 + rho_uniform) dO_i . [(P V - O^) + sum_j P_ij rho'_j (V_j - O^)]
// because the row's common factor cancels between sum_j P^ dP and D sum_j P^.
// So per dimension d:
//   |sum_j dK^_jd| <= sum_j bound_jd + F scale sum_i |Q_id| e^{rho_uniform_i} (C_i + expm1(rho_vary_i)(A_i + B_i))
// with C_i = |dO_i| . (forward bound of O_i), A_i = sum_j P_ij |dO_i| . |V_j|,
// B_i = |dO_i| . |O^_i|. This is "the sum of |dK_j| times a few ulps" (the
// u |dK^_jd| term of each bound) plus what the row's own rounding leaves in
// sum_j dS_ij: without those terms a head whose dK is all rounding error (V
// rows equal: dS = 0 exactly) would fail.
//
// Catches: dS without the rowsum term (sum_j dS_ij = D_i), D computed from
// the wrong output or the wrong dout row, a dK accumulated over a wrong set of
// rows (a key's dK from another row's dS), stale or NaN dK.
// Cannot catch: dQ or dV faults; a wrong factor on every dK (the sum stays 0);
// dK of a group taken from one query head (each head's sum is 0 by itself).
#include <cmath>
#include <sstream>

#include "law_framework/grad_support.h"
#include "oracle/oracle.h"
#include "problem/number_text.h"

namespace attncheck {

Law law_grad_key_shift_zero() {
  Law law;
  law.name = "grad_key_shift_zero";
  law.statement = "the key gradients of each (batch, kv head) sum to zero over its keys (softmax ignores a common key shift)";
  law.features = kEveryFeature & ~ATTNCHECK_FEATURE_SOFTCAP & ~ATTNCHECK_FEATURE_SINKS;
  law.required = kBackwardFeature;
  law.check = [](Implementation& impl, const Problem& drawn) {
    const Problem p = backward_of(drawn);
    if (p.softcap != 0 || !p.sinks.empty()) return Verdict::not_applicable("a soft-cap or sinks: a key shift moves the weights");
    GradRun run;
    if (auto bad = run_backward_bounded(impl, p, run, GradErrorModel{false, false})) return *bad;
    const Shape& s = p.shape;
    const GradMagnitudes& m = run.magnitudes;
    const std::vector<double>& dk = run.outcome.dk;
    const double sc = std::abs(p.effective_scale());
    const int64_t group = s.heads / s.kv_head_count();
    Tally tally;
    std::string worst;
    for (int64_t kv = 0; kv < s.batch * s.kv_head_count(); ++kv) {
      const int64_t b = kv / s.kv_head_count(), first_head = b * s.heads + (kv % s.kv_head_count()) * group;
      // The keys some row of the group sees, and whether every such row is judged.
      std::vector<uint8_t> seen(s.kv_len, 0);
      bool judged = true, any = false;
      std::vector<long double> residual(s.head_dim, 0.0L);
      for (int64_t bh = first_head; bh < first_head + group; ++bh)
        for (int64_t i = 0; i < s.q_len; ++i) {
          const int64_t r = bh * s.q_len + i;
          if (!m.seen[r]) continue;
          any = true;
          if (!m.judged[r]) { judged = false; continue; }
          for (int64_t j = 0; j < s.kv_len; ++j) seen[j] |= p.visible(bh, i, j);
          const double row = std::exp(m.rho_uniform[r]) * (m.c[r] + std::expm1(m.rho_vary[r]) * (m.a[r] + m.b[r]));
          for (int64_t d = 0; d < s.head_dim; ++d) residual[d] += sc * std::abs(p.q[p.q_at(bh, i, d)]) * row;
        }
      if (!any || !judged) continue;
      for (int64_t d = 0; d < s.head_dim; ++d) {
        long double sum = 0, allowed = kBoundSafetyFactor * residual[d], largest = 0;
        int64_t keys = 0;
        for (int64_t j = 0; j < s.kv_len; ++j) {
          if (!seen[j]) continue;
          ++keys;
          const int64_t at = p.k_at(kv, j, d);
          sum += dk[at];
          allowed += run.bounds.dk[at];
          largest = std::max(largest, static_cast<long double>(std::abs(dk[at])));
        }
        if (!std::isfinite(static_cast<double>(allowed))) continue;
        tally.judge();
        const double got = static_cast<double>(sum);
        if (std::abs(got) <= static_cast<double>(allowed)) continue;
        const double ratio = std::isnan(got) ? INFINITY : std::abs(got) / static_cast<double>(allowed);
        if (tally.record_worst(kv * s.head_dim + d, ratio)) {
          // A sum just over what is allowed: the digits that tell the two apart.
          const PairText t = pair_text(got, static_cast<double>(allowed));
          std::ostringstream os;
          os << "sum_j dk[b=" << b << "][kvh=" << kv % s.kv_head_count() << "][j][d=" << d << "] over the " << keys
             << " visible key(s) is " << t.a << ", allowed " << t.b
             << " (largest |dk| there " << num(static_cast<double>(largest)) << ")";
          worst = os.str();
        }
      }
    }
    if (auto v = tally.settled("no (batch, kv head) whose rows are all judged sees a key")) return *v;
    return Verdict::fail(std::to_string(tally.violations) + " (batch, kv head, d) sum(s) of dk are not zero; worst: " +
                         worst + "; adding one vector to every key cannot change the output");
  };
  return law;
}

}  // namespace attncheck
