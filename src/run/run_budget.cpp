#include "run/run_budget.h"

#include <sstream>

namespace attncheck {

RunBudget::RunBudget(double seconds)
    : seconds_(seconds),
      // (NaN compares false: no bound.) Clamped before the conversion: a
      // double past the duration's range converts to an undefined value.
      bounded_(seconds > 0 && seconds < kUnboundedBudgetSeconds),
      deadline_(std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(bounded_ ? seconds : 0))) {}

bool RunBudget::over() {
  if (bounded() && !spent_ && std::chrono::steady_clock::now() >= deadline_) spent_ = true;
  return spent_;
}

std::string RunBudget::describe() const {
  std::ostringstream m;
  m << "the --budget of " << seconds_ << " s was spent: nothing was called after it; the laws running then "
    << "judged fewer cases, and every law left with fewer than --min-judged is insufficient";
  return m.str();
}

std::string RunBudget::not_run() const {
  std::ostringstream m;
  m << "not run: the --budget of " << seconds_ << " s was spent";
  return m.str();
}

Outcome BudgetedImplementation::run(const Problem& problem) {
  if (budget_.over()) return {CallStatus::unsupported, {}, "not called: the --budget of the run is spent"};
  return inner_.run(problem);
}

}  // namespace attncheck
