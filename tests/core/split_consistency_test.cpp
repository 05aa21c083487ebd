// split_consistency (src/laws/split_consistency.cpp) and its zoo member
// skipped_tile_lse (src/impls/zoo/skipped_tile_lse.cpp), on hand-made cases:
// the member's fault is exactly "the first tile of a query block's range hidden
// from every row of the block"; the law's tolerance is the parts' own oracle
// bounds (a part's lse moved within its bound passes, moved far beyond it
// fails); rows that see nothing of one part never read that part's lse; an
// implementation without masks is skipped, never passed.
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "driver/law_run.h"
#include "impls/builtins.h"
#include "impls/in_process.h"
#include "law_framework/law.h"
#include "oracle/oracle.h"
#include "problem/problem.h"

namespace attncheck {
namespace {

// A problem of this shape with fixed, varied values: multiples of 1/16 in
// [-1, 1) (exact in every dtype) from a small LCG, the lse asked for.
Problem filled(const Shape& shape, Causal causal = Causal::none) {
  Problem p = make_problem(DType::f32, shape, causal);
  uint32_t state = 2024;
  const auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return static_cast<double>(static_cast<int>((state >> 16) % 32) - 16) / 16.0;
  };
  for (std::vector<double>* t : {&p.q, &p.k, &p.v})
    for (double& x : *t) x = next();
  p.lse_requested = true;
  return p;
}

// p with keys [first, last] hidden from the rows in [row_begin, row_end) of every head.
Problem hiding(Problem p, int64_t first, int64_t last, int64_t row_begin = 0, int64_t row_end = -1) {
  const Shape& s = p.shape;
  if (row_end < 0) row_end = s.q_len;
  p.mask.assign(s.mask_size(), 1);
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = row_begin; i < row_end; ++i)
      for (int64_t j = first; j <= last; ++j) p.mask[p.mask_at(bh, i, j)] = 0;
  return p;
}

double largest_gap(const std::vector<double>& a, const std::vector<double>& b) {
  double gap = 0;
  for (std::size_t n = 0; n < a.size(); ++n) gap = std::max(gap, std::abs(a[n] - b[n]));
  return gap;
}

struct Gap {
  double out, lse;
};

Gap member_gap(const Problem& p) {
  const Outcome want = make_builtin("reference")->run(p);
  const Outcome got = make_builtin("skipped_tile_lse")->run(p);
  EXPECT_EQ(got.status, CallStatus::ok) << got.message;
  return {largest_gap(got.out, want.out), largest_gap(got.lse, want.lse)};
}

TEST(SkippedTileLse, WrongOnlyWhenTheFirstTileOfTheRangeIsHiddenFromTheWholeBlock) {
  const Problem p = filled({1, 2, 3, 40, 4, 3});  // 3 rows: one block; keys 0..39: tiles 0-15, 16-31, 32-39
  EXPECT_LT(member_gap(p).lse, 1e-5);
  EXPECT_LT(member_gap(p).out, 1e-5);
  const Gap skipped = member_gap(hiding(p, 0, 15));
  EXPECT_LT(skipped.out, 1e-5);   // the output is normalised by the running sum: right
  EXPECT_GT(skipped.lse, 1e-3);   // the lse counts an extra exp(0)
  EXPECT_LT(member_gap(hiding(p, 0, 14)).lse, 1e-5);      // key 15 seen: the tile is processed
  EXPECT_LT(member_gap(hiding(p, 16, 31)).lse, 1e-5);     // a later tile skipped: merged from the right start
  EXPECT_LT(member_gap(hiding(p, 0, 15, 0, 2)).lse, 1e-5);  // row 2 sees the tile: not skipped
  // Under a causal rule the range of the block's rows starts at key 0 too.
  const Problem causal = filled({1, 1, 3, 80, 4, 3}, Causal::bottom_right);
  EXPECT_LT(member_gap(causal).lse, 1e-5);
  EXPECT_GT(member_gap(hiding(causal, 0, 40)).lse, 1e-3);
}

const Law& split_law() {
  const Law* law = find_law("split_consistency");
  EXPECT_NE(law, nullptr);
  return *law;
}

TEST(SplitConsistency, PassesTheReferencesAndCatchesTheMember) {
  const Problem p = filled({2, 2, 5, 96, 8, 4});
  for (const char* name : {"reference", "naive", "online"}) {
    const Verdict v = check_case(split_law(), *make_builtin(name), p);
    EXPECT_TRUE(v.passed()) << name << ": " << v.message;
  }
  const Verdict v = check_case(split_law(), *make_builtin("skipped_tile_lse"), p);
  ASSERT_TRUE(v.failed()) << v.message;
  EXPECT_NE(v.message.find("merged by their lse"), std::string::npos) << v.message;
  // The whole call (the case) first, so a saved case replays the same splits; then the two parts.
  ASSERT_EQ(v.calls.size(), 3u);
  EXPECT_EQ(v.calls[0].problem, p);
  EXPECT_NE(v.calls[1].problem.mask, v.calls[2].problem.mask);
  // lse in base 2 breaks the merge's weights too.
  EXPECT_TRUE(check_case(split_law(), *make_builtin("lse_base2"), p).failed());
}

// reference, with the lse of every call whose mask hides key 0 from every row
// (part B of both splits: the contiguous split's [0, t), the partition's first
// run) moved up by `factor` times that call's own oracle lse bound.
class PartLseMoved final : public Implementation {
 public:
  explicit PartLseMoved(double factor) : factor_(factor) {}
  std::string name() const override { return "part_lse_moved"; }
  std::string source() const override { return "test:part_lse_moved"; }
  FeatureBits features() const override { return kAllFeatures; }
  Outcome run(const Problem& p) override {
    Outcome o = reference_->run(p);
    bool hides_key0 = p.has_mask();
    for (int64_t bh = 0; bh < p.shape.batch * p.shape.heads && hides_key0; ++bh)
      for (int64_t i = 0; i < p.shape.q_len; ++i) hides_key0 = hides_key0 && !p.mask_allows(bh, i, 0);
    if (!hides_key0 || o.lse.empty()) return o;
    const OracleResult r = oracle(p);
    for (std::size_t row = 0; row < o.lse.size(); ++row)
      if (std::isfinite(o.lse[row]) && std::isfinite(r.lse_bound[row]))
        o.lse[row] = static_cast<float>(o.lse[row] + factor_ * r.lse_bound[row]);
    return o;
  }

 private:
  double factor_;
  std::unique_ptr<Implementation> reference_ = make_builtin("reference");
};

// The tolerance is the parts' bounds, derived: an lse within its own bound
// (as a correct kernel's may be) passes, one 30 bounds off fails.
TEST(SplitConsistency, ToleranceIsThePartsOwnBounds) {
  const Problem p = filled({1, 2, 4, 96, 8, 4});
  PartLseMoved within(0.9), beyond(30);
  const Verdict ok = check_case(split_law(), within, p);
  EXPECT_TRUE(ok.passed()) << ok.message;
  const Verdict bad = check_case(split_law(), beyond, p);
  EXPECT_TRUE(bad.failed()) << bad.message;
}

// reference, except that a row that sees no key gets lse 0 instead of -inf
// (lse_matches_oracle's to judge, not this law's).
class EmptyRowsLseZero final : public Implementation {
 public:
  std::string name() const override { return "empty_rows_lse_zero"; }
  std::string source() const override { return "test:empty_rows_lse_zero"; }
  FeatureBits features() const override { return kAllFeatures; }
  Outcome run(const Problem& p) override {
    Outcome o = reference_->run(p);
    for (int64_t bh = 0; bh < p.shape.batch * p.shape.heads && !o.lse.empty(); ++bh)
      for (int64_t i = 0; i < p.q_len_of(bh / p.shape.heads); ++i)
        if (!p.row_sees_any_key(bh, i)) o.lse[bh * p.shape.q_len + i] = 0;
    return o;
  }

 private:
  std::unique_ptr<Implementation> reference_ = make_builtin("reference");
};

// reference, except that row 0's lse in a call without a mask (the whole
// call) is 0.5 too large.
class WholeRow0LseOff final : public Implementation {
 public:
  std::string name() const override { return "whole_row0_lse_off"; }
  std::string source() const override { return "test:whole_row0_lse_off"; }
  FeatureBits features() const override { return kAllFeatures; }
  Outcome run(const Problem& p) override {
    Outcome o = reference_->run(p);
    if (!p.has_mask() && !o.lse.empty()) o.lse[0] += 0.5;
    return o;
  }

 private:
  std::unique_ptr<Implementation> reference_ = make_builtin("reference");
};

// A row that sees nothing of one part is the other part, exactly: that
// part's lse (and its zeros) are never merged, and the row is judged against
// the other part. Under top_left causality row 0 sees key 0 alone, which is
// in part A of both splits.
TEST(SplitConsistency, RowsThatSeeNothingOfAPartTakeTheOtherExactly) {
  const Problem p = filled({1, 1, 64, 64, 4, 3}, Causal::top_left);
  EmptyRowsLseZero empty_rows;
  const Verdict v = check_case(split_law(), empty_rows, p);
  EXPECT_TRUE(v.passed()) << v.message;
  WholeRow0LseOff row0;
  const Verdict off = check_case(split_law(), row0, p);
  ASSERT_TRUE(off.failed()) << off.message;
  EXPECT_NE(off.message.find("[i=0]"), std::string::npos) << off.message;
  EXPECT_NE(off.message.find("part B sees no key"), std::string::npos) << off.message;
}

// The parts are masked calls: an implementation with the lse and without
// masks is skipped with the reason, never passed or insufficient.
TEST(SplitConsistency, AnImplementationWithoutMasksIsSkipped) {
  const BuiltinInfo* ref = find_builtin("reference");
  ASSERT_NE(ref, nullptr);
  InProcessImplementation no_masks("no_masks", ref->forward_v2, kAllFeatures & ~ATTNCHECK_FEATURE_MASK);
  RunOptions o;
  o.cases = 10;
  const LawReport r = run_law(split_law(), no_masks, o);
  EXPECT_EQ(r.status, LawStatus::skipped) << r.message;
  EXPECT_NE(r.message.find("mask"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace attncheck
