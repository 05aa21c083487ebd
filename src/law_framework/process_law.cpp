#include "law_framework/process_law.h"

#include <algorithm>

namespace attncheck {

Law make_process_law(std::string name, std::string statement, CallStatus fault) {
  Law law;
  law.name = std::move(name);
  law.statement = std::move(statement);
  law.judges_fault = fault;
  // Every feature, a v2 view's gaps and padding rows included (they are
  // outside out too), and backward problems when the implementation declares
  // a backward: a process law judges every kind of call the implementation
  // takes, so "pass" never stands on forward calls alone for one whose every
  // backward crashes (run_law: a kind of call that never completed).
  law.features = kEveryFeature;
  // Only these statuses complete what each law judges: a crash or a hang
  // returned at all (no_crash, no_timeout judge an error code too: the call
  // came back, in time); the guard zones and the poison in out are inspected
  // only after a call that answered ok, so an error code leaves
  // no_out_of_bounds_write and writes_every_output nothing to judge.
  const bool error_completes = fault == CallStatus::crash || fault == CallStatus::timeout;
  law.check = [fault, error_completes](Implementation& impl, const Problem& p) {
    const Outcome o = impl.run(p);
    if (o.status == fault) return Verdict::fail(std::string(call_status_name(fault)) + ": " + o.message);
    // Unsupported, or another process fault: judged by its own law, and
    // counted by the runner's fault budget like any other fault.
    if (o.status == CallStatus::unsupported || is_process_fault(o.status)) return *unusable(o);
    if (o.status == CallStatus::error && !error_completes)
      return Verdict{VerdictStatus::incomplete, "the call returned an error code (" + o.message + ")", o.status, {}, {}};
    // ok, or (no_crash, no_timeout) an error code returned cleanly: the process behaved.
    return Verdict::pass();
  };
  return law;
}

std::vector<ProcessLawCharge> charge_process_faults(const std::vector<ProcessFault>& seen,
                                                    const std::function<bool(const Law&)>& failed_on_its_own) {
  std::vector<ProcessLawCharge> charges;
  for (const ProcessFault& f : seen) {
    const Law* judge = process_law_for(f.status);
    if (!judge) continue;
    const bool decided = std::any_of(charges.begin(), charges.end(),
                                     [&](const ProcessLawCharge& c) { return c.law == judge; });
    if (decided || failed_on_its_own(*judge)) continue;
    charges.push_back({judge, &f});
  }
  return charges;
}

int completed_judged_calls(std::string_view law, int judged, bool failed_on_its_own_case) {
  return judged - (failed_on_its_own_case && is_process_law(law) ? 1 : 0);
}

}  // namespace attncheck
