// Measured descriptions: for each fault outside the models, an implementation
// with exactly that fault gets a description holding the measured number
// (within a tolerance that follows from the probes, not from the fault), a
// correct implementation never gets one, and measuring stays bounded in calls
// and time and survives declined or crashing calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <regex>

#include "diagnosis/diagnose.h"
#include "diagnosis/measurements.h"
#include "diagnosis/probe_problems.h"
#include "faulty_attention.h"
#include "impls/in_process.h"

namespace attncheck {
namespace {

using testing::FaultyAttention;
using testing::Faults;

// A shrunk-looking failing case: 2 query rows over 6 keys, head_dim 8 (or
// `head_dim`), logits of standard deviation 1.5, no mask.
Problem failing_case(DType t = DType::f32, int64_t head_dim = 8) {
  return gaussian_probe(t, {1, 1, 2, 6, head_dim, 3}, NAN, 1.5, 1234);
}

// Diagnoses printed, so a test log shows the measured figures.
std::string shown(std::string d) {
  std::printf("  %s\n", d.c_str());
  return d;
}

// The number that follows `lead` in `text`; NaN when `lead` is absent.
double number_after(const std::string& text, const std::string& lead) {
  const std::size_t at = text.find(lead);
  if (at == std::string::npos) return NAN;
  return std::stod(text.substr(at + lead.size()));
}

TEST(Measure, EffectiveScale) {
  FaultyAttention impl({.scale_factor = 0.693});
  const std::string d = shown(diagnose(impl, failing_case()));
  EXPECT_EQ(d.rfind("measured: ", 0), 0u) << d;
  EXPECT_NEAR(number_after(d, "behaves like "), 0.693, 0.005) << d;
  EXPECT_NE(d.find("times the requested scale"), std::string::npos) << d;
  EXPECT_EQ(d.find("weights sum to"), std::string::npos) << d;  // the mass is right
}

TEST(Measure, WeightMass) {
  FaultyAttention impl({.denominator_extra = 0.37});
  const std::string d = shown(diagnose(impl, failing_case()));
  EXPECT_NEAR(number_after(d, "weights sum to "), 1 / 1.37, 0.01) << d;
  EXPECT_NE(d.find("extra mass in the denominator"), std::string::npos) << d;
  EXPECT_EQ(d.find("times the requested scale"), std::string::npos) << d;  // the scale is right
}

// The measured precision (diagnose names this fault by its model now,
// "accumulates in 16-bit": tests/diagnosis/claims_test.cpp).
TEST(Measure, AccumulationPrecision) {
  FaultyAttention impl({.accumulate_bits = 11});
  const std::string d = shown(measure(impl, failing_case()));
  const double bits = number_after(d, "errors like ");
  EXPECT_GE(bits, 9) << d;
  EXPECT_LE(bits, 13) << d;
  EXPECT_NE(d.find("-bit accumulation, growing"), std::string::npos) << d;
}

TEST(Measure, LogitThreshold) {
  FaultyAttention impl({.saturate_above = 30});
  Problem p = failing_case();
  for (double& x : p.q) x = round_to(p.dtype, x * 40);  // logits up to ~100
  const std::string d = shown(diagnose(impl, p));
  const double at = number_after(d, "wrong only when a logit exceeds ");
  EXPECT_GE(at, 27) << d;
  EXPECT_LE(at, 33) << d;
}

TEST(Measure, OnlyOneHeadDim) {
  FaultyAttention impl({.scale_factor = 0.693, .only_head_dim = 64});
  const std::string d = shown(diagnose(impl, failing_case(DType::f32, 64)));
  EXPECT_NE(d.find("wrong only at head_dim 64 (right at 16, 128)"), std::string::npos) << d;
  EXPECT_NEAR(number_after(d, "behaves like "), 0.693, 0.005) << d;
}

TEST(Measure, OnlyOneDtype) {
  FaultyAttention impl({.scale_factor = 0.693, .only_dtype = DType::f16});
  const std::string d = shown(diagnose(impl, failing_case(DType::f16)));
  EXPECT_NE(d.find("wrong only in f16 (right in f32, f64, bf16)"), std::string::npos) << d;
}

TEST(Measure, OnlyWithTheMask) {
  // Masked keys at logit -1 instead of left out: none of the probes has a
  // mask, only the failing case does.
  FaultyAttention impl({.masked_logit = -1});
  Problem p = failing_case();
  p.mask.assign(p.shape.mask_size(), 1);
  p.mask[p.mask_at(0, 0, 2)] = p.mask[p.mask_at(0, 1, 5)] = 0;
  const std::string d = shown(diagnose(impl, p));
  EXPECT_EQ(d, "measured: wrong only with the mask (right without it)");
}

TEST(Measure, UnsupportedVariantsAreSkipped) {
  FaultyAttention impl({.scale_factor = 0.693, .only_dtype = DType::f16, .unsupported = {DType::f64, DType::bf16}});
  const std::string d = shown(diagnose(impl, failing_case(DType::f16)));
  EXPECT_NE(d.find("wrong only in f16 (right in f32)"), std::string::npos) << d;
}

// Correct attention, in every dtype, with and without causal rules and masks,
// at several sizes: never a measured description.
TEST(Measure, CorrectImplementationsAreNeverMeasured) {
  FaultyAttention faultless({});
  std::vector<std::unique_ptr<Implementation>> refs;
  for (const char* name : {"reference", "naive", "online"}) refs.push_back(make_builtin(name));
  uint64_t seed = 7;
  for (DType t : every_dtype())
    for (Causal c : {Causal::none, Causal::top_left})
      for (int64_t d : {1, 8, 64}) {
        Problem p = gaussian_probe(t, {1, 2, 3, 5, d, 2}, NAN, 3, ++seed);
        p.causal = c;
        if (d == 8) p.mask = std::vector<uint8_t>(p.shape.mask_size(), 1), p.mask[1] = 0;
        EXPECT_EQ(measure(faultless, p), "") << p.header();
        for (auto& r : refs) EXPECT_EQ(measure(*r, p), "") << r->name() << " " << p.header();
      }
}

// Counts calls; answers `status` (a crash, say) for everything but the case
// it was built for, which it computes with a wrong scale.
class BreaksOnProbes final : public Implementation {
 public:
  BreaksOnProbes(Problem failing, CallStatus status) : failing_(std::move(failing)), status_(status) {}
  std::string name() const override { return "breaks"; }
  std::string source() const override { return "test:breaks"; }
  Outcome run(const Problem& p) override {
    ++calls;
    if (p.shape == failing_.shape && p.q == failing_.q && p.dtype == failing_.dtype && p.causal == failing_.causal &&
        p.mask == failing_.mask)
      return inner_.run(p);
    return {status_, {}, "no"};
  }
  int calls = 0;

 private:
  Problem failing_;
  CallStatus status_;
  FaultyAttention inner_{{.scale_factor = 0.693}};
};

TEST(Measure, CrashEndsMeasuring) {
  BreaksOnProbes impl(failing_case(), CallStatus::crash);
  EXPECT_EQ(measure(impl, failing_case()), "");
  EXPECT_EQ(impl.calls, 1);  // the first probe crashed; nothing after it
}

TEST(Measure, DeclinedProbesAreSkipped) {
  BreaksOnProbes impl(failing_case(), CallStatus::unsupported);
  EXPECT_EQ(measure(impl, failing_case()), "");
  EXPECT_LE(impl.calls, kMaxMeasureCalls);
}

// Each fault above at head_dim 128 (the costliest probes): at most
// kMaxMeasureCalls calls of measuring and well under a second per diagnosis.
TEST(Measure, BoundedInCallsAndTime) {
  const std::vector<Faults> faults = {{.scale_factor = 0.693},
                                      {.denominator_extra = 0.37},
                                      {.accumulate_bits = 11},
                                      {.saturate_above = 30},
                                      {.scale_factor = 0.693, .only_head_dim = 128},
                                      {.scale_factor = 0.693, .only_dtype = DType::f32}};
  double slowest = 0;
  for (const Faults& f : faults) {
    FaultyAttention impl(f);
    Problem p = failing_case(DType::f32, 128);
    if (f.saturate_above > 0)
      for (double& x : p.q) x = round_to(p.dtype, x * 40);
    const auto start = std::chrono::steady_clock::now();
    const std::string d = diagnose(impl, p);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const int diagnose_calls = impl.calls;
    impl.calls = 0;
    measure(impl, p);
    std::printf("  %.3f s, %d calls (%d measuring): %s\n", seconds, diagnose_calls, impl.calls, d.c_str());
    EXPECT_FALSE(d.empty());
    EXPECT_LE(impl.calls, kMaxMeasureCalls);
    slowest = std::max(slowest, seconds);
  }
  EXPECT_LT(slowest, 1.0);
}

}  // namespace
}  // namespace attncheck
