// ABI v3's declared numerics (docs/abi/plugin-abi-v3.md, "Declared numerics";
// docs/tolerance.md, "Declared numerics"): ATTNCHECK_NUMERICS_Q_AS_Q8_0 widens the
// oracle's bound by exactly ggml's rounding of q to q8_0 blocks, only on calls with
// K in Q8_0 or Q4_0 (Problem::numerics, set by the generator for an implementation
// that declares it). A kernel doing that rounding lands over the unwidened bound and
// within the widened one; declared for a call it does not apply to (F16 keys) it
// fails; undeclared it fails; declared and unused it passes.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "driver/law_run.h"
#include "gen/generators.h"
#include "impls/builtins.h"
#include "impls/in_process.h"
#include "law_framework/law.h"
#include "oracle/oracle.h"
#include "problem/dtype.h"
#include "problem/kv_numerics.h"
#include "problem/problem.h"

namespace attncheck {
namespace {

// ggml's quantize_row_q8_0_ref on one query row of f32 (src/ggml-quants.c): per block of 32
// channels d = amax / 127 stored as binary16, n = roundf(x / d), and the dot products read
// n * d16. q' replaces q.
void ggml_q8_0_round_row(double* q, int64_t D) {
  for (int64_t c0 = 0; c0 < D; c0 += 32) {
    float amax = 0;
    for (int64_t c = c0; c < c0 + 32; ++c) amax = std::max(amax, std::abs(static_cast<float>(q[c])));
    const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
    const double d16 = round_to(DType::f16, d);
    for (int64_t c = c0; c < c0 + 32; ++c) q[c] = std::roundf(static_cast<float>(q[c]) * id) * d16;
  }
}

// A kernel that rounds q to q8_0 blocks (ggml's CPU path: f32 q converted to K's vec_dot_type)
// on the calls with K in Q8_0 or Q4_0, and also with F16 K when `also_f16` (the fault the spec
// names: "a kernel that declares Q_AS_Q8_0 and rounds q for an F16 K fails"); otherwise the
// reference. Dtype f32 only rounds (ggml's query is f32); it declares `declared` numerics.
class QAsQ8_0Kernel final : public Implementation {
 public:
  QAsQ8_0Kernel(uint32_t declared, bool rounds, bool also_f16) : declared_(declared), rounds_(rounds), also_f16_(also_f16) {}
  std::string name() const override { return "q_as_q8_0_kernel"; }
  std::string source() const override { return "builtin:q_as_q8_0_kernel"; }
  FeatureBits features() const override { return inner_->features() | kKvFormatsFeature; }
  uint32_t kv_formats() const override { return (1u << 9) - 2; }
  uint32_t numerics() const override { return declared_; }
  Outcome run(const Problem& p) override {
    const bool block_k = p.k_format == KvFormat::q8_0 || p.k_format == KvFormat::q4_0;
    if (!rounds_ || p.dtype != DType::f32 || !(block_k || (also_f16_ && p.k_format == KvFormat::f16)) ||
        p.shape.head_dim % 32 != 0)
      return inner_->run(p);
    Problem r = p;
    r.numerics = 0;
    for (int64_t row = 0; row < p.shape.batch * p.shape.heads * p.shape.q_len; ++row)
      ggml_q8_0_round_row(&r.q[static_cast<std::size_t>(row * p.shape.head_dim)], p.shape.head_dim);
    return inner_->run(r);
  }

 private:
  uint32_t declared_;
  bool rounds_, also_f16_;
  std::unique_ptr<Implementation> inner_ = make_builtin("reference");
};

// One f32 row against two keys of 32 channels in Q8_0 (d = 1/64: key 0 all 1.0, key 1 all 0),
// V = [1, 0]: q = [127, 1.5, 2.5, ..., 31.5] has d = 1 and rounds every channel but the
// first by +1/2 (roundf), 8/9 of the allowance (9/16) d + 2^-18: logit 0 moves by 15.5 * 2^-10.
Problem q8_case(KvFormat kf) {
  Problem p = make_problem(DType::f32, Shape{1, 1, 1, 2, 32, 1, 1}, Causal::none, std::ldexp(1.0, -10));
  p.q[0] = 127;
  for (int64_t c = 1; c < 32; ++c) p.q[static_cast<std::size_t>(c)] = static_cast<double>(c) + 0.5;
  for (int64_t c = 0; c < 32; ++c) p.k[static_cast<std::size_t>(c)] = 1.0, p.k[static_cast<std::size_t>(32 + c)] = 0.0;
  p.v = {1, 0};
  p.k_format = kf;
  if (kf == KvFormat::q8_0) p.k_scales = {1.0 / 64, 1.0 / 64};
  return p;
}

TEST(NumericsBound, QAsQ8_0RoundingIsOverTheUnwidenedBoundAndWithinTheWidened) {
  Problem plain = q8_case(KvFormat::q8_0);
  ASSERT_EQ(plain.inconsistency(), "");
  Problem widened = plain;
  widened.numerics = numerics_that_apply(plain, kNumericsQAsQ8_0);
  ASSERT_EQ(widened.numerics, kNumericsQAsQ8_0);
  ASSERT_EQ(widened.inconsistency(), "");
  QAsQ8_0Kernel kernel(ATTNCHECK_NUMERICS_Q_AS_Q8_0, true, false);
  const Outcome o = kernel.run(plain);
  ASSERT_EQ(o.status, CallStatus::ok) << o.message;
  const Comparison unwidened = compare_to_oracle(plain, oracle(plain), o.out);
  const Comparison within = compare_to_oracle(widened, oracle(widened), o.out);
  EXPECT_FALSE(unwidened.ok) << "the rounding of q hides in the binary32 bound: worst " << unwidened.worst_ratio;
  EXPECT_GT(unwidened.worst_ratio, 100);
  EXPECT_TRUE(within.ok) << "worst " << within.worst_ratio << " of the widened bound";
  // The allowance is used, not dwarfed: the rounding costs a good part of the widened bound.
  EXPECT_GT(within.worst_ratio, 0.1);
  // The reference (q not rounded) passes both.
  const Outcome ref = make_builtin("reference")->run(widened);
  EXPECT_TRUE(compare_to_oracle(widened, oracle(widened), ref.out).ok);
}

// The bit applies only with K in Q8_0 or Q4_0: the same values in F16 keys get no widening,
// and the kernel that rounds q there anyway fails (the spec's example).
TEST(NumericsBound, TheBitDoesNotApplyToF16Keys) {
  Problem p = q8_case(KvFormat::f16);
  ASSERT_EQ(p.inconsistency(), "");
  EXPECT_EQ(numerics_that_apply(p, kNumericsQAsQ8_0), 0);
  Problem wrong = p;
  wrong.numerics = kNumericsQAsQ8_0;
  EXPECT_NE(wrong.inconsistency().find("does not apply"), std::string::npos) << wrong.inconsistency();
  QAsQ8_0Kernel kernel(ATTNCHECK_NUMERICS_Q_AS_Q8_0, true, true);
  const Outcome o = kernel.run(p);
  ASSERT_EQ(o.status, CallStatus::ok) << o.message;
  EXPECT_FALSE(compare_to_oracle(p, oracle(p), o.out).ok);
}

// A call where a bit applies keeps q finite and below 2^15 (the spec's precondition).
TEST(NumericsBound, AQueryOf2To15BreaksThePrecondition) {
  Problem p = q8_case(KvFormat::q8_0);
  p.numerics = kNumericsQAsQ8_0;
  p.q[3] = 32768;
  EXPECT_NE(p.inconsistency().find("below 2^15"), std::string::npos) << p.inconsistency();
  p.q[3] = std::nan("");
  EXPECT_NE(p.inconsistency().find("below 2^15"), std::string::npos) << p.inconsistency();
}

// The generator: for an implementation declaring Q_AS_Q8_0, numerics is set exactly on the
// calls with K in Q8_0 or Q4_0, q keeps the precondition on every stored-format call, and the
// problems are otherwise those drawn without the declaration.
TEST(NumericsDraws, TheBitIsSetExactlyWhereItApplies) {
  GenOptions o;
  o.dtypes = {DType::f32, DType::f16, DType::bf16};
  o.features = (kAllFeatures & ~ATTNCHECK_FEATURE_STRIDES) | kKvFormatsFeature;  // as quantized_matches_oracle
  o.required = kKvFormatsFeature;
  o.kv_formats = (1u << 9) - 2;
  o.head_dims = {32, 64};
  o.same_dims = true;
  GenOptions declared = o;
  declared.numerics = ATTNCHECK_NUMERICS_Q_AS_Q8_0;
  int with_bit = 0, block_k = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    const Problem plain = sample_problem(o, seed, 30);
    const Problem p = sample_problem(declared, seed, 30);
    ASSERT_EQ(p.inconsistency(), "") << "seed " << seed << ": " << p.header();
    EXPECT_EQ(plain.numerics, 0);
    const bool applies = p.k_format == KvFormat::q8_0 || p.k_format == KvFormat::q4_0;
    block_k += applies;
    EXPECT_EQ(p.numerics, applies ? kNumericsQAsQ8_0 : 0) << "seed " << seed;
    with_bit += p.numerics != 0;
    for (double x : p.q) ASSERT_LT(std::abs(x), kNumericsQueryLimit) << "seed " << seed;
    Problem same = p;
    same.numerics = 0;
    same.q = plain.q;
    EXPECT_TRUE(same == plain) << "seed " << seed << ": the declaration changed more than numerics and q";
  }
  EXPECT_GT(with_bit, 10);
  EXPECT_EQ(with_bit, block_k);
}

// KV_PRECISION (declared, not judged yet: no problem holds the bit) still gets the spec's
// preconditions where it applies (dtype f32, K or V in F16, BF16, Q8_0 or Q4_0): q, keys and
// values below 2^15 and every partial sum sum_c |q_c k_jc| of a live key too. Some of the
// same seeds drawn without the declaration break them (large value families).
TEST(NumericsDraws, KvPrecisionKeepsPartialSumsBelow2To15) {
  GenOptions o;
  o.dtypes = {DType::f32};
  o.features = (kAllFeatures & ~ATTNCHECK_FEATURE_STRIDES) | kKvFormatsFeature;
  o.required = kKvFormatsFeature;
  o.kv_formats = (1u << 9) - 2;
  o.head_dims = {32, 64};
  o.same_dims = true;
  GenOptions declared = o;
  declared.numerics = ATTNCHECK_NUMERICS_KV_PRECISION;
  auto largest_partial_sum = [](const Problem& p) {
    double worst = 0;
    for (int64_t bh = 0; bh < p.shape.batch * p.shape.heads; ++bh)
      for (int64_t i = 0; i < p.shape.q_len; ++i)
        for (int64_t j = 0; j < p.kv_len_of(bh / p.shape.heads); ++j) {
          double sum = 0;
          for (int64_t c = 0; c < p.shape.head_dim; ++c)
            sum += std::abs(p.q[p.q_at(bh, i, c)] * p.k[p.k_at(p.kv_of(bh), j, c)]);
          worst = std::max(worst, sum);
        }
    return worst;
  };
  int applies = 0, plain_breaks = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    const Problem p = sample_problem(declared, seed, 30);
    ASSERT_EQ(p.inconsistency(), "") << "seed " << seed;
    EXPECT_EQ(p.numerics, 0) << "seed " << seed << ": KV_PRECISION is not judged yet";
    if (!(numerics_that_apply(p, kNumericsKvPrecision) & kNumericsKvPrecision)) continue;
    ++applies;
    EXPECT_LT(largest_partial_sum(p), kNumericsQueryLimit) << "seed " << seed << ": " << p.header();
    for (const auto* t : {&p.q, &p.k, &p.v})
      for (double x : *t)
        if (std::isfinite(x)) EXPECT_LT(std::abs(x), kNumericsQueryLimit) << "seed " << seed;
    const Problem plain = sample_problem(o, seed, 30);
    plain_breaks += largest_partial_sum(plain) >= kNumericsQueryLimit;
  }
  EXPECT_GT(applies, 20);
  EXPECT_GT(plain_breaks, 0) << "no drawn case needed the precondition: the test shows nothing";
}

RunOptions numerics_options(uint64_t seed) {
  RunOptions o;
  o.seed = seed;
  o.cases = 40;
  o.min_judged = 10;
  o.gen.dtypes = {DType::f32};
  return o;
}

const Law& quantized() {
  const Law* l = find_law("quantized_matches_oracle");
  EXPECT_NE(l, nullptr);
  return *l;
}

// quantized_matches_oracle on drawn cases: the ggml-style kernel passes when it declares
// Q_AS_Q8_0, fails when it does not, and fails when it also rounds q for F16 keys; a kernel
// that declares the bit and rounds nothing passes.
TEST(NumericsLaw, QuantizedMatchesOracleJudgesQAsQ8_0) {
  for (const uint64_t seed : {1u, 2u}) {
    QAsQ8_0Kernel declared(ATTNCHECK_NUMERICS_Q_AS_Q8_0, true, false);
    const LawReport pass = run_law(quantized(), declared, numerics_options(seed));
    EXPECT_EQ(pass.status, LawStatus::pass) << "seed " << seed << ": " << pass.message;
    QAsQ8_0Kernel undeclared(0, true, false);
    const LawReport fail = run_law(quantized(), undeclared, numerics_options(seed));
    EXPECT_EQ(fail.status, LawStatus::fail) << "seed " << seed << ": " << fail.message;
    QAsQ8_0Kernel on_f16(ATTNCHECK_NUMERICS_Q_AS_Q8_0, true, true);
    const LawReport f16 = run_law(quantized(), on_f16, numerics_options(seed));
    EXPECT_EQ(f16.status, LawStatus::fail) << "seed " << seed << ": " << f16.message;
    QAsQ8_0Kernel unused(ATTNCHECK_NUMERICS_Q_AS_Q8_0, false, false);
    const LawReport plain = run_law(quantized(), unused, numerics_options(seed));
    EXPECT_EQ(plain.status, LawStatus::pass) << "seed " << seed << ": " << plain.message;
  }
}

// equal_values_across_formats stores INT8 keys as Q8_0 (d = the scale): on that twin the
// declared bit applies, and the ggml-style kernel, which rounds q there and not for the INT8
// call, is judged by the widened bound on it.
TEST(NumericsLaw, EqualValuesAcrossFormatsWidensTheQ8_0Twin) {
  const Law* law = find_law("equal_values_across_formats");
  ASSERT_NE(law, nullptr);
  QAsQ8_0Kernel declared(ATTNCHECK_NUMERICS_Q_AS_Q8_0, true, false);
  const LawReport r = run_law(*law, declared, numerics_options(1));
  EXPECT_EQ(r.status, LawStatus::pass) << r.message;
}

}  // namespace
}  // namespace attncheck
