// The laws that build calls of another shape than the case's, on a kernel with
// an inference runtime's grouped-query limits (issue #33, item 5): it takes
// value_dim = head_dim only, and head dims a multiple of 8 only. The probe
// learns both, cases are drawn within them, and
//   softcap_bounds_weights reads the weights through V = identity in blocks of
//     the kernel's value_dim (the kv_len-wide identity is refused);
//   logit_shift_invariance shifts the logits within the kernel's head_dim (its
//     head_dim + 1 call is refused): last k column 1, last q column 0 or x.
// Each judges its floor on the correct reference, and still fails a fault.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "driver/law_run.h"
#include "gen/profiles.h"
#include "impls/in_process.h"
#include "law_framework/law.h"
#include "run/shape_probe.h"

namespace attncheck {
namespace {

// `inner` behind the limits; with drop_softcap, a kernel that ignores the soft-cap.
class GroupedQueryLimits final : public Implementation {
 public:
  explicit GroupedQueryLimits(std::unique_ptr<Implementation> inner, bool drop_softcap = false)
      : inner_(std::move(inner)), drop_softcap_(drop_softcap) {}
  std::string name() const override { return inner_->name() + " (value_dim = head_dim, multiples of 8)"; }
  std::string source() const override { return inner_->source(); }
  FeatureBits features() const override { return inner_->features(); }
  Outcome run(const Problem& p) override {
    if (p.shape.value_dim != p.shape.head_dim || p.shape.head_dim % 8 != 0) {
      Outcome o;
      o.status = CallStatus::unsupported;
      o.message = "value_dim = head_dim, a multiple of 8, only";
      return o;
    }
    if (!drop_softcap_) return inner_->run(p);
    Problem uncapped = p;
    uncapped.softcap = 0;
    return inner_->run(uncapped);
  }

 private:
  std::unique_ptr<Implementation> inner_;
  bool drop_softcap_;
};

// `law` on `impl` as check runs it at default settings: the default profile,
// restricted to what the probe learned, the default floor of judged cases.
LawReport run_limited(const std::string& law, Implementation& impl) {
  RunOptions o;
  o.seed = 20261130;
  o.shrink_seconds = 2;
  o.min_judged = kDefaultMinJudged;
  o.gen = find_profile("default")->options();
  const ShapeFindings found = probe_shapes(impl, DType::f32);
  EXPECT_TRUE(found.same_dims) << found.describe();
  for (int64_t d : found.head_dims) EXPECT_EQ(d % 8, 0) << found.describe();
  EXPECT_FALSE(found.head_dims.empty()) << found.describe();
  restrict_to(o.gen, found);
  return run_law(*find_law(law), impl, o);
}

TEST(ShapeLimitedLaws, SoftcapBoundsWeightsJudgesItsFloor) {
  GroupedQueryLimits impl(make_builtin("reference"));
  const LawReport r = run_limited("softcap_bounds_weights", impl);
  EXPECT_EQ(r.status, LawStatus::pass) << r.message;
  EXPECT_GE(r.judged, kDefaultMinJudged) << r.message;
}

TEST(ShapeLimitedLaws, SoftcapBoundsWeightsFailsAnIgnoredCap) {
  GroupedQueryLimits impl(make_builtin("reference"), /*drop_softcap=*/true);
  const LawReport r = run_limited("softcap_bounds_weights", impl);
  ASSERT_EQ(r.status, LawStatus::fail) << r.message;
  // Seen on the weights read in blocks of the kernel's value_dim, or on the vanishing cap.
  ASSERT_FALSE(r.failing_calls.empty()) << r.message;
  const Problem& seen = r.failing_calls.front().problem;
  EXPECT_EQ(seen.shape.value_dim, seen.shape.head_dim) << r.failing_calls.front().derivation;
}

TEST(ShapeLimitedLaws, LogitShiftInvarianceJudgesItsFloor) {
  GroupedQueryLimits impl(make_builtin("reference"));
  const LawReport r = run_limited("logit_shift_invariance", impl);
  EXPECT_EQ(r.status, LawStatus::pass) << r.message;
  EXPECT_GE(r.judged, kDefaultMinJudged) << r.message;
}

TEST(ShapeLimitedLaws, LogitShiftInvarianceFailsSoftmaxBypass) {
  GroupedQueryLimits impl(make_builtin("seed_softmax_bypass"));
  const LawReport r = run_limited("logit_shift_invariance", impl);
  ASSERT_EQ(r.status, LawStatus::fail) << r.message;
  ASSERT_EQ(r.failing_calls.size(), 2u) << r.message;
  // Both calls at the kernel's own head_dim: the shift is in the last column.
  EXPECT_NE(r.failing_calls[0].derivation.find("last column"), std::string::npos) << r.failing_calls[0].derivation;
  EXPECT_EQ(r.failing_calls[0].problem.shape.head_dim, r.failing_calls[1].problem.shape.head_dim);
  EXPECT_EQ(r.failing_calls[1].problem.shape.head_dim % 8, 0);
}

}  // namespace
}  // namespace attncheck
