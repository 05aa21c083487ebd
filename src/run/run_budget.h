// `check --budget SECONDS`: a bound on the whole run. Once it is spent no
// implementation is called again: every further call answers "unsupported"
// with the reason, and the law still running stops with what it judged
// (RunSettings::stop_reason); it and the laws not yet started are
// insufficient with the reason ("not run: the --budget of 30 s was spent")
// unless they judged --min-judged cases already, so a budget never passes a
// law it left unjudged, and the report comes out on time however slow the
// plugin is. A budget of kUnboundedBudgetSeconds or more (1e10, inf) is no
// bound: no deadline that far can be represented, none is needed. Under --jobs N every
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

// About 31 years: past it a budget bounds nothing in practice, and a deadline
// that far is near what steady_clock's time_point holds (signed 64-bit
// nanoseconds from an epoch that may be 1970: 292 years in all).
inline constexpr double kUnboundedBudgetSeconds = 1e9;

class RunBudget {
 public:
  // seconds <= 0, NaN or >= kUnboundedBudgetSeconds (inf too): no bound.
  explicit RunBudget(double seconds);
  bool bounded() const { return bounded_; }
  // Whether the bound has passed; records that it did.
  bool over();
  bool spent() const { return spent_; }
  std::string describe() const;
  // Why a law was not run, or stopped: "not run: the --budget of 30 s was spent".
  std::string not_run() const;

 private:
  double seconds_;
  bool bounded_;
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
  uint32_t promises() const override { return inner_.promises(); }
  uint32_t kv_formats() const override { return inner_.kv_formats(); }
  uint32_t numerics() const override { return inner_.numerics(); }
  bool shift_buffers(std::size_t bytes) override { return inner_.shift_buffers(bytes); }

 private:
  Implementation& inner_;
  RunBudget& budget_;
};

}  // namespace attncheck
