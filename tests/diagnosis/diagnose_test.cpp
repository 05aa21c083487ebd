// A fault model is named only when it explains the failing case itself: an
// implementation that returns NaN for rows with no visible key and also uses
// a wrong scale must not be diagnosed as the NaN fault on a case without a
// mask (it was, through the derived problem "with a mask"). The NaN fault
// alone, on a case with an empty row, still is; the zoo keeps its diagnoses.
#include <gtest/gtest.h>

#include <cmath>

#include "diagnosis/diagnose.h"
#include "diagnosis/probe_problems.h"
#include "faulty_attention.h"
#include "impls/in_process.h"

namespace attncheck {
namespace {

using testing::FaultyAttention;
using testing::Faults;

constexpr const char* kNanModel = "NaN instead of zeros for rows that see no key";

// One query row over 4 keys, head_dim 8, f32, no mask, no causal rule:
// with q_len 1 the derived "with a mask" leaves the only row without keys.
Problem unmasked_case() { return gaussian_probe(DType::f32, {1, 1, 1, 4, 8, 2}, NAN, 1.5, 42); }

TEST(Diagnose, ModelThatDoesNotApplyToTheFailingCaseIsNotNamed) {
  FaultyAttention impl({.scale_factor = 0.693, .nan_for_empty_rows = true});
  const std::string d = diagnose(impl, unmasked_case());
  EXPECT_EQ(d.find(kNanModel), std::string::npos) << d;
  EXPECT_NE(d.find("0.693 times the requested scale"), std::string::npos) << d;
}

TEST(Diagnose, NanForEmptyRowsStillNamedWhereItExplainsTheCase) {
  Problem p = gaussian_probe(DType::f32, {1, 1, 2, 4, 8, 2}, NAN, 1.5, 43);
  p.mask.assign(p.shape.mask_size(), 1);
  for (int64_t j = 0; j < 4; ++j) p.mask[p.mask_at(0, 0, j)] = 0;  // row 0 sees no key
  FaultyAttention impl({.nan_for_empty_rows = true});
  EXPECT_EQ(diagnose(impl, p), std::string("behaves like: ") + kNanModel);
}

TEST(Diagnose, FoundingLayerKeepsItsDiagnosis) {
  const std::unique_ptr<Implementation> impl = make_builtin("seed_unscaled");
  ASSERT_TRUE(impl);
  // The README's case: one query, two keys, head_dim 16, value_dim 1.
  Problem p = gaussian_probe(DType::f64, {1, 1, 1, 2, 16, 1}, NAN, 4, 44);
  p.v = {0, 1};
  EXPECT_EQ(diagnose(*impl, p).rfind("behaves like: attention without the 1/sqrt(d) scale", 0), 0u);
}

TEST(Diagnose, CorrectImplementationGetsNoDiagnosis) {
  FaultyAttention impl({});
  for (DType t : every_dtype()) {
    Problem p = gaussian_probe(t, {2, 2, 3, 5, 8, 3}, NAN, 2, 45);
    p.causal = Causal::bottom_right;
    EXPECT_EQ(diagnose(impl, p), "") << dtype_name(t);
  }
}

}  // namespace
}  // namespace attncheck
