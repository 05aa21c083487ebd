// The matcher: runs the implementation on the failing case and on problems
// derived from it, and asks each fault model whether it explains the output.
#include "diagnosis/diagnose.h"
#include "diagnosis/grad_fault_models.h"
#include "diagnosis/promise_diagnosis.h"

#include <cmath>

#include "diagnosis/derived_problems.h"
#include "diagnosis/fault_models.h"
#include "diagnosis/measurements.h"
#include "oracle/oracle.h"

namespace attncheck {

namespace {

enum class Fit { contradicts, consistent, explains };

// Does the prediction explain `got`? Every element the correct oracle says is
// wrong must be judged by the model (a finite bound) or be one the model
// leaves free (bound NaN: the fault's computation leaves the representable
// domain there), and every judged element must agree. `explains` when some
// wrong element agrees with a judged prediction, else `consistent`. Used for
// out and for the lse; an empty prediction judges nothing.
Fit fit(const std::vector<double>& pred, const std::vector<double>& bound, const std::vector<double>& got,
        const std::vector<char>& wrong) {
  bool evidence = false;
  for (std::size_t k = 0; k < got.size(); ++k) {
    if (!pred.empty() && std::isnan(bound[k])) continue;
    if (pred.empty() || std::isinf(bound[k])) {
      if (wrong[k]) return Fit::contradicts;
      continue;
    }
    const bool agrees = std::isnan(pred[k]) ? std::isnan(got[k])
                                            : got[k] == pred[k] || std::abs(got[k] - pred[k]) <= bound[k];  // == : -inf
    if (!agrees) return Fit::contradicts;
    evidence = evidence || wrong[k];
  }
  return evidence ? Fit::explains : Fit::consistent;
}

// Where `got` breaks the correct oracle's bound.
std::vector<char> wrong_elements(const std::vector<double>& exact, const std::vector<double>& bound,
                                 const std::vector<double>& got) {
  std::vector<char> wrong(got.size(), 0);
  for (std::size_t k = 0; k < got.size(); ++k)
    wrong[k] = std::isfinite(bound[k]) && !(got[k] == exact[k] || std::abs(got[k] - exact[k]) <= bound[k]);
  return wrong;
}

}  // namespace

std::string diagnose(Implementation& impl, const Problem& failing) {
  // An implementation promising determinism whose bits move with its buffers
  // (ABI v3): as accurate as a correct one, so before any model of a wrong value.
  if (std::string d = diagnose_moved_buffers(impl, failing); !d.empty()) return d;
  // A backward case: the gradients against the backward fault models first
  // (the forward laws' models judge out, which a backward fault leaves right).
  if (failing.is_backward())
    if (std::string d = diagnose_gradients(impl, failing); !d.empty()) return d;
  // Per model: on how many derived problems it explains a wrong output, and
  // whether any problem it applies to contradicts it.
  const std::vector<FaultModel>& models = fault_models();
  std::vector<int> explained(models.size(), 0);
  std::vector<char> contradicted(models.size(), 0);
  std::vector<std::string> first_seen(models.size());
  bool failing_ran = false;
  for (const Derived& d : derived_problems(failing, impl.features())) {
    if (!d.p.inconsistency().empty()) continue;
    const Outcome o = impl.run(d.p);
    if (o.status != CallStatus::ok) continue;
    failing_ran = failing_ran || d.how.empty();
    OracleResult right = oracle(d.p);
    judge_empty_rows_as_zeros(right);  // NaN rows that see nothing are a fault to diagnose too
    // The lse is judged where the problem requests it (ABI v2).
    const bool lse_judged = d.p.lse_requested && o.lse.size() == right.lse_exact.size();
    const bool correct_here = compare_to_oracle(d.p, right, o.out).ok &&
                              (!lse_judged || compare_lse_to_oracle(d.p, right, o.lse).ok);
    const std::vector<char> wrong = wrong_elements(right.exact, right.bound, o.out);
    const std::vector<char> wrong_lse =
        lse_judged ? wrong_elements(right.lse_exact, right.lse_bound, o.lse) : std::vector<char>{};
    for (std::size_t m = 0; m < models.size(); ++m) {
      if (contradicted[m]) continue;
      const std::optional<Prediction> pr = models[m].predict(d.p);
      // A model that cannot show on this problem predicts correct attention
      // here, so a wrong output contradicts it. Without this, a model that
      // applies only to derived problems (NaN for rows with no visible key,
      // on "with a mask") was named for failures it does not explain.
      if (!pr) {
        if (!correct_here) contradicted[m] = 1;
        continue;
      }
      const Fit out_fit = fit(pr->out, pr->bound, o.out, wrong);
      const Fit lse_fit = lse_judged ? fit(pr->lse, pr->lse_bound, o.lse, wrong_lse) : Fit::consistent;
      if (out_fit == Fit::contradicts || lse_fit == Fit::contradicts) {
        contradicted[m] = 1;
        continue;
      }
      if (out_fit != Fit::explains && lse_fit != Fit::explains) continue;
      if (explained[m]++ == 0) first_seen[m] = d.how;
    }
  }
  if (!failing_ran) return "";
  // The first model in the table's order that explains a wrong output and is
  // never contradicted.
  for (std::size_t m = 0; m < models.size(); ++m) {
    if (contradicted[m] || explained[m] == 0) continue;
    std::string r = "behaves like: " + std::string(models[m].description);
    if (!first_seen[m].empty()) r += " (seen " + first_seen[m] + ")";
    return r;
  }
  // No model explains it: say in numbers what the outputs show.
  return measure(impl, failing);
}

}  // namespace attncheck
