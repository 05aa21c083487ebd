#include "laws/process_law.h"

namespace attncheck {

Law make_process_law(std::string name, std::string statement, CallStatus fault) {
  Law law;
  law.name = std::move(name);
  law.statement = std::move(statement);
  law.judges_fault = fault;
  law.features = kAllFeatures;  // a v2 view's gaps and padding rows are outside out too
  law.check = [fault](Implementation& impl, const Problem& p) {
    const Outcome o = impl.run(p);
    if (o.status == fault) return Verdict::fail(std::string(call_status_name(fault)) + ": " + o.message);
    // Unsupported, or another process fault: judged by its own law, and
    // counted by the runner's fault budget like any other fault.
    if (o.status == CallStatus::unsupported || is_process_fault(o.status)) return *unusable(o);
    // ok, or an error code returned cleanly: the process behaved.
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
