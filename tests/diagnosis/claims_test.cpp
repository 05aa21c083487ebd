// Issue #34, "diagnoses claim what was not measured": each claim a diagnosis
// prints rests on a measurement that holds. A dtype is called right only where
// its bound could have seen the failure; a length threshold is not claimed
// beside a failing case that contradicts it; a NaN leaking from padding is not
// taken for a fault model's prediction; a kernel that sums in f16 is named
// ("accumulates in 16-bit"), and faults of another kind are not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

#include "diagnosis/diagnose.h"
#include "diagnosis/measurements.h"
#include "diagnosis/probe_problems.h"
#include "f16_nearest.h"
#include "faulty_attention.h"
#include "impls/in_process.h"
#include "problem/feature_transforms.h"
#include "problem/transforms.h"

namespace attncheck {
namespace {

using testing::FaultyAttention;
using testing::Faults;

std::string shown(std::string d) {
  std::printf("  %s\n", d.c_str());
  return d;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

constexpr const char* kSixteenBit = "behaves like: accumulates in 16-bit";

// ---- dtypes --------------------------------------------------------------------

// A fault of the same relative size (1e-9) in every dtype: it breaks f64's
// bound and no other. "wrong only in f64 (right in f32, f16, bf16)" was
// claimed; those dtypes' bounds cannot see an error of 1e-9.
TEST(Claims, DtypeRightOnlyWhereItsBoundCouldSeeTheFailure) {
  FaultyAttention impl({.output_error = 1e-9});
  const Problem p = gaussian_probe(DType::f64, {1, 1, 2, 6, 8, 3}, NAN, 1.5, 1234);
  const std::string d = shown(measure(impl, p));
  EXPECT_FALSE(has(d, "wrong only in")) << d;
  // The same fault made large in f16 alone is still told apart by dtype.
  FaultyAttention f16_only({.scale_factor = 0.693, .only_dtype = DType::f16});
  const std::string e = shown(measure(f16_only, gaussian_probe(DType::f16, {1, 1, 2, 6, 8, 3}, NAN, 1.5, 1234)));
  EXPECT_TRUE(has(e, "wrong only in f16 (right in f32, f64, bf16)")) << e;
}

// A fixed relative error of 1e-5 in f32 at every head_dim: the bound grows
// with head_dim (the dot products' rounding), so from 64 on it covers 1e-5.
// "wrong only at head_dim 8, 16 (right at 64, 128)" was claimed.
TEST(Claims, HeadDimRightOnlyWhereItsBoundCouldSeeTheFailure) {
  FaultyAttention impl({.output_error = 1e-5});
  const std::string d = shown(measure(impl, gaussian_probe(DType::f32, {1, 1, 2, 6, 8, 3}, NAN, 1.5, 1234)));
  EXPECT_FALSE(has(d, "wrong only at head_dim")) << d;
  FaultyAttention at_64({.scale_factor = 0.693, .only_head_dim = 64});
  const std::string e = shown(measure(at_64, gaussian_probe(DType::f32, {1, 1, 2, 6, 64, 3}, NAN, 1.5, 1234)));
  EXPECT_TRUE(has(e, "wrong only at head_dim 64 (right at 16, 128)")) << e;
}

// batch_head_swapped (every dtype) on a shrunk case whose f32 logit overflows
// (q.k = 1.7e38 * 4.4e12): NaN in f32, while in f64 the swapped block of zeros
// is right. "wrong only in f32, bf16 (right in f64)" was claimed; a NaN
// output measures the dtype's range, not where the fault is.
TEST(Claims, DtypeNotCalledRightFromANanFailure) {
  const std::unique_ptr<Implementation> impl = make_builtin("batch_head_swapped");
  ASSERT_TRUE(impl);
  Problem p = make_problem(DType::f32, {2, 2, 1, 1, 1, 1}, Causal::none, NAN);
  p.q = {0, 1.7014118e38, 0, 0};
  p.k = {0, 4398046511104, 0, 0};
  p.v = {0, 0, 0, 0};
  const std::optional<ProbeRun> own = run_probe(*impl, p);
  ASSERT_TRUE(own && !own->correct);
  const std::string d = shown(measure(*impl, p));
  EXPECT_FALSE(has(d, "wrong only in")) << d;
}

// ---- lengths -------------------------------------------------------------------

// Sums rounded to 11 bits (f16's precision) in an f16 problem: on the length
// probes (logits of standard deviation 1, values near 1) the error stays
// within f16's bound up to kv_len 64 and breaks it from 512, yet the failing
// case has 51 keys: q = 0 (weights 1/51), v = 52224 then fifty 24s, so the
// running sum reaches 1024 and every further 24/51 is lost (1024 for 1047.5).
// "wrong only from kv_len 512 (right up to 64)" was claimed beside it.
TEST(Claims, LengthThresholdNotClaimedBesideAShorterFailingCase) {
  FaultyAttention impl({.accumulate_bits = 11});
  Problem p = gaussian_probe(DType::f16, {1, 1, 1, 51, 8, 1}, NAN, 1.0, 77);
  p.q.assign(p.q.size(), 0);
  p.v.assign(p.v.size(), 24);
  p.v[0] = 52224;
  const std::optional<ProbeRun> own = run_probe(impl, p);
  ASSERT_TRUE(own && !own->correct) << "the case must fail at kv_len 51";
  const std::string d = shown(measure(impl, p));
  EXPECT_FALSE(has(d, "wrong only from kv_len")) << d;
}

// A fault only from 100 keys on (a kernel's long-sequence path): with the
// failing case at 120 keys the claim holds and is still made.
TEST(Claims, LengthThresholdStillClaimedWhereTheCaseAgrees) {
  class LongPathScaled final : public Implementation {
   public:
    std::string name() const override { return "long_path"; }
    std::string source() const override { return "test:long_path"; }
    Outcome run(const Problem& p) override { return (p.shape.kv_len >= 100 ? wrong_ : right_).run(p); }

   private:
    FaultyAttention right_{{}}, wrong_{{.scale_factor = 0.9}};
  } impl;
  const std::string d = shown(measure(impl, gaussian_probe(DType::f32, {1, 1, 2, 120, 8, 3}, NAN, 1.5, 5)));
  EXPECT_TRUE(has(d, "wrong only from kv_len 120 (right up to 64)")) << d;
}

// ---- NaN from the padding --------------------------------------------------------

// Softmax over the real keys only, but the weighted sum runs over every key
// up to kv_len with weight 0 for padding: 0 x NaN = NaN leaks from NaN
// values in the padding. The query-axis model (whose own sum read the padding)
// predicted NaN there too and was named.
class PaddingTimesZero final : public Implementation {
 public:
  std::string name() const override { return "padding_times_zero"; }
  std::string source() const override { return "test:padding_times_zero"; }
  FeatureBits features() const override { return kV1Features | ATTNCHECK_FEATURE_LENGTHS; }
  Outcome run(const Problem& p) override {
    const Shape& s = p.shape;
    std::vector<double> out(s.out_size(), 0.0), w(s.kv_len);
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = 0; i < s.q_len; ++i) {
        if (!p.row_exists(bh, i) || !p.row_sees_any_key(bh, i)) continue;
        double top = -INFINITY, sum = 0;
        for (int64_t j = 0; j < s.kv_len; ++j)
          if (p.visible(bh, i, j)) top = std::max(top, static_cast<double>(exact_logit(p, bh, i, j)));
        for (int64_t j = 0; j < s.kv_len; ++j)
          sum += w[j] = p.visible(bh, i, j) ? std::exp(static_cast<double>(exact_logit(p, bh, i, j)) - top) : 0.0;
        for (int64_t c = 0; c < s.value_dim; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < s.kv_len; ++j) acc += w[j] / sum * p.v[p.v_at(p.kv_of(bh), j, c)];  // padding too
          out[p.out_at(bh, i, c)] = round_to(p.dtype, acc);
        }
      }
    return {CallStatus::ok, out, ""};
  }
};

TEST(Claims, NanLeakingFromPaddingIsNotTheQueryAxisFault) {
  // Shrunk as lengths_equal_slices leaves it: one query over one real key,
  // padding after both (q_lens = kv_lens = {1}), values 0. The law fails it
  // with the padding filled with NaN; diagnosed on the case as drawn and on
  // the call that failed.
  Problem p = make_problem(DType::f32, {1, 1, 1, 2, 1, 1}, Causal::none, NAN);
  p.q = {1};
  p.k = {1, 0};
  p.v = {0, 0};
  p.q_lens = {1};
  p.kv_lens = {1};
  ASSERT_EQ(p.inconsistency(), "");
  PaddingTimesZero impl;
  for (const Problem& c : {p, with_padding_filled(p, std::numeric_limits<double>::quiet_NaN())}) {
    const std::string d = shown(diagnose(impl, c));
    EXPECT_FALSE(has(d, "query axis")) << d;
  }
}

// ---- 16-bit accumulation -----------------------------------------------------------

// The example plugin's kernel (plugins/example_c/example_attention.c) with
// its sums narrowed to f16 (_Float16 as a user wrote it; f16_nearest, since clang 14
// has none on x86): logits and weights in
// double, `sum` and `acc` rounded to f16 after every add, acc += w / sum * v
// (or, `at_end`, acc += w * v and out = acc / sum).
class SixteenBitSums final : public Implementation {
 public:
  explicit SixteenBitSums(bool at_end) : at_end_(at_end) {}
  std::string name() const override { return "f16_sums"; }
  std::string source() const override { return "test:f16_sums"; }
  Outcome run(const Problem& p) override {
    const Shape& s = p.shape;
    std::vector<double> out(s.out_size(), 0.0), w(s.kv_len);
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = 0; i < s.q_len; ++i) {
        double top = -INFINITY;
        for (int64_t j = 0; j < s.kv_len; ++j) {
          if (!p.visible(bh, i, j)) continue;
          double dot = 0;
          for (int64_t d = 0; d < s.head_dim; ++d) dot += p.q[p.q_at(bh, i, d)] * p.k[p.k_at(p.kv_of(bh), j, d)];
          top = std::max(top, w[j] = p.effective_scale() * dot);
        }
        if (std::isinf(top)) continue;  // sees no key: zeros
        double sum = 0;
        for (int64_t j = 0; j < s.kv_len; ++j)
          if (p.visible(bh, i, j)) sum = f16_nearest(sum + (w[j] = std::exp(w[j] - top)));
        for (int64_t c = 0; c < s.value_dim; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < s.kv_len; ++j)
            if (p.visible(bh, i, j))
              acc = f16_nearest(acc + (at_end_ ? w[j] : w[j] / sum) * p.v[p.v_at(p.kv_of(bh), j, c)]);
          out[p.out_at(bh, i, c)] = round_to(p.dtype, at_end_ ? acc / sum : acc);
        }
      }
    return {CallStatus::ok, out, ""};
  }

 private:
  bool at_end_;
};

// Shrunk-looking failing cases in f32 and f64, with and without a causal
// rule: the model names the kernel, normalising each term or the total.
TEST(Claims, SixteenBitAccumulationIsNamed) {
  for (bool at_end : {false, true})
    for (DType t : {DType::f32, DType::f64})
      for (const Shape& shape : {Shape{1, 1, 1, 2, 1, 1}, Shape{1, 1, 2, 6, 8, 3}, Shape{2, 2, 3, 40, 16, 4}}) {
        SixteenBitSums impl(at_end);
        Problem p = gaussian_probe(t, shape, NAN, 1.5, 99 + shape.kv_len);
        if (shape.kv_len == 40) p.causal = Causal::bottom_right;
        const std::optional<ProbeRun> own = run_probe(impl, p);
        ASSERT_TRUE(own && !own->correct) << p.header();
        const std::string d = shown(diagnose(impl, p));
        EXPECT_EQ(d.rfind(kSixteenBit, 0), 0u) << (at_end ? "at end: " : "each: ") << p.header() << "\n" << d;
      }
}

// Faults of another kind, small or large, are not taken for it: a fixed
// relative error, a coarser (bf16-like, 8-bit) accumulation, a wrong scale.
TEST(Claims, OtherFaultsAreNotSixteenBitAccumulation) {
  const std::vector<Faults> faults = {{.output_error = 1e-9}, {.output_error = 1e-5}, {.accumulate_bits = 8},
                                      {.scale_factor = 0.693}, {.denominator_extra = 0.01}};
  for (const Faults& f : faults)
    for (DType t : {DType::f32, DType::f64}) {
      FaultyAttention impl(f);
      const Problem p = gaussian_probe(t, {1, 1, 2, 6, 8, 3}, NAN, 1.5, 1234);
      const std::string d = shown(diagnose(impl, p));
      EXPECT_FALSE(has(d, "16-bit")) << dtype_name(t) << ": " << d;
    }
}

}  // namespace
}  // namespace attncheck
