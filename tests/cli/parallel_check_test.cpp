// Tests of `check --jobs N` below the command line: a worker's answer comes
// back exact, and N workers give the results one worker gives, in order.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "run/check_implementation.h"
#include "run/law_result_wire.h"
#include "run/parallel_check.h"
#include "impls/in_process.h"
#include "law_framework/law.h"

namespace attncheck {
namespace {

uint64_t bits(double x) { return std::bit_cast<uint64_t>(x); }

TEST(LawResultWire, RoundTripIsExact) {
  LawResult l;
  l.run.law = "matches_oracle";
  l.run.status = LawStatus::fail;
  l.run.cases = 7;
  l.run.judged = 5;
  l.run.largest = {2, 3, 4, 5, 6, 7};
  l.run.dtypes = {DType::f16, DType::bf16};
  l.run.message = std::string("row 0\n\0 with a NUL", 18);
  l.run.skip_reason = SkipReason::unsupported;
  Problem p = make_problem(DType::f64, {1, 1, 2, 2, 1, 1}, Causal::bottom_right, -0.0);
  double payload_nan;
  const uint64_t payload = 0x7ff8000000000123ull;
  std::memcpy(&payload_nan, &payload, sizeof payload_nan);
  p.q = {payload_nan, -0.0};
  p.k = {std::numeric_limits<double>::infinity(), 5e-324};
  p.v = {-1.5, 2.0};
  p.mask = {1, 0, 0, 1};
  l.run.counterexample = p;
  l.run.diagnosis = "behaves like: something";
  l.run.shrink_steps = 12;
  l.run.fault_status = CallStatus::timeout;
  l.run.fault_message = "no answer";
  l.run.faults = 3;
  l.seconds = 1.25;

  LawResult back;
  ASSERT_TRUE(decode_law_result(encode_law_result(l), back));
  EXPECT_EQ(back.run.law, l.run.law);
  EXPECT_EQ(back.run.status, l.run.status);
  EXPECT_EQ(back.run.largest, l.run.largest);
  EXPECT_EQ(back.run.dtypes, l.run.dtypes);
  EXPECT_EQ(back.run.message, l.run.message);
  EXPECT_EQ(back.run.skip_reason, l.run.skip_reason);
  ASSERT_TRUE(back.run.counterexample);
  EXPECT_FALSE(back.run.fault_case);
  const Problem& q = *back.run.counterexample;
  EXPECT_EQ(q.shape, p.shape);
  EXPECT_EQ(q.causal, p.causal);
  EXPECT_EQ(bits(q.scale), bits(-0.0));
  EXPECT_EQ(bits(q.q[0]), payload);
  EXPECT_EQ(bits(q.q[1]), bits(-0.0));
  EXPECT_EQ(q.k, p.k);
  EXPECT_EQ(q.mask, p.mask);
  EXPECT_EQ(back.run.diagnosis, l.run.diagnosis);
  EXPECT_EQ(back.run.shrink_steps, 12);
  EXPECT_EQ(back.run.fault_status, CallStatus::timeout);
  EXPECT_EQ(back.run.faults, 3);
  EXPECT_EQ(back.seconds, 1.25);

  // The ABI v2 fields and a backward problem's dout come back too.
  p.mask_broadcast.per_row = false;
  p.mask = {1, 0};
  p.q_lens = {1};
  p.kv_lens = {2};
  p.window_left = 3;
  p.softcap = 2.5;
  p.bias = {-std::numeric_limits<double>::infinity(), 0.5, 1, 2};
  p.alibi_slopes = {0.25};
  p.sinks = {-1};
  p.lse_requested = true;
  p.layouts.dout = TensorLayout{{0, 2, 1}, {0, 3, 5}};
  p.dout = {0.75, payload_nan};
  l.run.counterexample = p;
  ASSERT_TRUE(decode_law_result(encode_law_result(l), back));
  const Problem& v2 = *back.run.counterexample;
  EXPECT_EQ(v2.mask_broadcast, p.mask_broadcast);
  EXPECT_EQ(v2.mask, p.mask);
  EXPECT_EQ(v2.q_lens, p.q_lens);
  EXPECT_EQ(v2.kv_lens, p.kv_lens);
  EXPECT_EQ(v2.window_left, 3);
  EXPECT_EQ(v2.window_right, -1);
  EXPECT_EQ(v2.softcap, 2.5);
  EXPECT_EQ(v2.bias, p.bias);
  EXPECT_EQ(v2.alibi_slopes, p.alibi_slopes);
  EXPECT_EQ(v2.sinks, p.sinks);
  EXPECT_TRUE(v2.lse_requested);
  EXPECT_EQ(v2.layouts, p.layouts);
  ASSERT_EQ(v2.dout.size(), 2u);
  EXPECT_EQ(v2.dout[0], 0.75);
  EXPECT_EQ(bits(v2.dout[1]), payload);
  EXPECT_TRUE(v2.is_backward());

  // Anything but exactly one encoded result is refused.
  const std::string bytes = encode_law_result(l);
  EXPECT_FALSE(decode_law_result(bytes.substr(0, bytes.size() - 1), back));
  EXPECT_FALSE(decode_law_result(bytes + "x", back));
}

// What run_checks hands out, per target, in order.
struct Collected {
  std::vector<std::size_t> started, done;
  std::vector<std::vector<LawResult>> laws;
};

// `extra[k]`: target k's extra_laws (none when extra is shorter).
Collected run(int jobs, const std::vector<std::string>& impls, const std::vector<const Law*>& laws,
              const std::vector<std::vector<const Law*>>& extra = {}) {
  std::vector<Target> targets;
  for (std::size_t k = 0; k < impls.size(); ++k)
    targets.push_back(Target{
        .name = impls[k],
        .source = "builtin:" + impls[k],
        .open = builtin_factory(impls[k]),
        .new_instance_per_law = true,
        .extra_laws = k < extra.size() ? extra[k] : std::vector<const Law*>{},
    });
  RunSettings settings{.options = {.seed = 99, .cases = 15}};
  settings.options.gen.dtypes = {DType::f32};
  RunBudget budget(0);
  Collected c;
  std::vector<std::string> errors;
  run_checks(
      targets, laws, settings, jobs, budget, [&](std::size_t k) { c.started.push_back(k); },
      [&](std::size_t k, std::vector<LawResult> results, double) {
        c.done.push_back(k);
        c.laws.push_back(std::move(results));
      },
      errors);
  EXPECT_TRUE(errors.empty());
  return c;
}

TEST(RunChecks, TwoWorkersGiveWhatOneGivesInTheSameOrder) {
  const std::vector<std::string> impls = {"scale_inverse_d", "reference", "nondeterministic_order"};
  const std::vector<const Law*> laws = {find_law("deterministic"), find_law("matches_oracle"),
                                        find_law("default_scale_is_inverse_sqrt_d")};
  const Collected one = run(1, impls, laws), two = run(2, impls, laws);
  const std::vector<std::size_t> in_order = {0, 1, 2};
  EXPECT_EQ(one.started, in_order);
  EXPECT_EQ(two.started, in_order);
  EXPECT_EQ(one.done, in_order);
  EXPECT_EQ(two.done, in_order);
  ASSERT_EQ(one.laws.size(), 3u);
  ASSERT_EQ(two.laws.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k)
    for (std::size_t j = 0; j < laws.size(); ++j) {
      const LawReport& a = one.laws[k][j].run;
      const LawReport& b = two.laws[k][j].run;
      EXPECT_EQ(a.law, laws[j]->name);
      EXPECT_EQ(b.law, a.law);
      EXPECT_EQ(b.status, a.status) << impls[k] << " " << a.law;
      EXPECT_EQ(b.cases, a.cases);
      EXPECT_EQ(b.judged, a.judged);
      EXPECT_EQ(b.message, a.message);
      EXPECT_EQ(b.diagnosis, a.diagnosis);
      EXPECT_EQ(b.counterexample.has_value(), a.counterexample.has_value());
    }
  // The faults the laws are there for were found.
  EXPECT_EQ(one.laws[0][2].run.status, LawStatus::fail);  // scale_inverse_d: default scale
  EXPECT_EQ(one.laws[2][0].run.status, LawStatus::fail);  // nondeterministic_order: deterministic
}

// A target's own laws (Target::extra_laws: the embedded default's pinned
// opt-in laws) run for it alone, after the run's laws, with one worker or two.
TEST(RunChecks, ExtraLawsRunForTheirTargetAloneAfterTheRunsLaws) {
  const std::vector<std::string> impls = {"reference", "nan_key_dropped", "naive"};
  const std::vector<const Law*> laws = {find_law("matches_oracle"), find_law("weights_sum_to_one")};
  const std::vector<std::vector<const Law*>> extra = {{}, {find_law("nan_propagates")}};
  for (int jobs : {1, 2}) {
    const Collected c = run(jobs, impls, laws, extra);
    ASSERT_EQ(c.laws.size(), 3u);
    ASSERT_EQ(c.laws[0].size(), 2u) << jobs;
    ASSERT_EQ(c.laws[1].size(), 3u) << jobs;
    ASSERT_EQ(c.laws[2].size(), 2u) << jobs;
    for (std::size_t k = 0; k < 3; ++k)
      for (std::size_t j = 0; j < 2; ++j) {
        EXPECT_EQ(c.laws[k][j].run.law, laws[j]->name);
        EXPECT_EQ(c.laws[k][j].run.status, LawStatus::pass) << impls[k] << " " << laws[j]->name;
      }
    EXPECT_EQ(c.laws[1][2].run.law, "nan_propagates");
    EXPECT_EQ(c.laws[1][2].run.status, LawStatus::fail) << c.laws[1][2].run.message;
  }
  std::vector<Target> targets(2);
  targets[1].extra_laws = extra[1];
  EXPECT_EQ(work_item_count(targets, laws), 5u);
}

}  // namespace
}  // namespace attncheck
