// `check --budget SECONDS`: a bound on the whole run. Once it is spent no
// implementation is called again: every further call answers "unsupported"
// with the reason, so the law still running stops with what it judged, the
// laws not yet started are skipped (LawRunSettings::skip_reason), and the
// report comes out on time however slow the plugin is. Under --jobs N every
// worker process has its copy, with the same deadline (steady_clock is the
// machine's): a worker reports that it found it spent, and the parent's copy
// then says so too (over() past the same deadline).
//
// Example usage:
//   RunBudget budget(30);                       // from now on
//   BudgetedImplementation b(*impl, budget);    // check b instead of *impl
//   ... if (budget.spent()) out << budget.describe() << "\n";
#pragma once

#include <chrono>
#include <string>

#include "impls/implementation.h"

namespace attncheck {

class RunBudget {
 public:
  // seconds <= 0: no bound.
  explicit RunBudget(double seconds);
  bool bounded() const { return seconds_ > 0; }
  // Whether the bound has passed; records that it did.
  bool over();
  bool spent() const { return spent_; }
  std::string describe() const;

 private:
  double seconds_;
  std::chrono::steady_clock::time_point deadline_;
  bool spent_ = false;
};

class BudgetedImplementation final : public Implementation {
 public:
  BudgetedImplementation(Implementation& inner, RunBudget& budget) : inner_(inner), budget_(budget) {}
  std::string name() const override { return inner_.name(); }
  std::string source() const override { return inner_.source(); }
  Outcome run(const Problem& problem) override;
  FeatureBits features() const override { return inner_.features(); }

 private:
  Implementation& inner_;
  RunBudget& budget_;
};

}  // namespace attncheck
