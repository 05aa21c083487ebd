// Every member of the bug zoo is caught, at any seed, by the laws pinned for
// it below (the laws whose statement its fault breaks on almost every case);
// the founding faults by the laws named in the founding case. A new zoo
// member fails this test until its laws are pinned here.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "impls/builtins.h"
#include "impls/in_process.h"
#include "driver/law_run.h"
#include "laws/law.h"
#include "property_env.h"

namespace attncheck {
namespace {

std::vector<std::string> zoo_names() {
  std::vector<std::string> names;
  for (const BuiltinInfo& b : builtins())
    if (b.kind == BuiltinKind::zoo) names.emplace_back(b.name);
  return names;
}

// Member -> the laws that must catch it. Other laws may catch it too (the
// README's table shows all of them for one seed); these must, at every seed.
const std::map<std::string, std::vector<std::string>>& pinned_laws() {
  static const std::map<std::string, std::vector<std::string>> pins = {
      {"seed_unscaled", {"query_sensitivity", "matches_oracle", "scale_invariance"}},
      {"seed_softmax_bypass", {"weights_sum_to_one", "output_in_value_hull", "matches_oracle"}},
      {"no_max_subtraction", {"finite_for_finite_inputs", "matches_oracle"}},
      {"scale_inverse_d", {"default_scale_is_inverse_sqrt_d", "matches_oracle"}},
      {"causal_off_by_one", {"causal_prefix_consistency", "causal_equals_explicit_mask", "masked_weights_zero"}},
      {"last_key_dropped", {"weights_sum_to_one", "single_key_passthrough", "matches_oracle"}},
      {"kv_swapped", {"matches_oracle", "weights_sum_to_one"}},
      {"batch_head_swapped", {"batch_head_independence", "matches_oracle"}},
      {"nondeterministic_order", {"deterministic"}},
      // ABI v2: each fault by the law written for its feature, and by the oracle.
      {"gqa_kv_modulo", {"gqa_equals_repeated_kv", "matches_oracle"}},
      {"strides_ignored", {"layout_invariance", "matches_oracle"}},
      {"padding_keys_attended", {"lengths_equal_slices", "matches_oracle"}},
      {"window_off_by_one", {"window_equals_mask", "matches_oracle"}},
      {"window_top_left", {"window_equals_mask", "matches_oracle"}},
      {"softcap_after_bias", {"matches_oracle", "bias_row_shift_invariance"}},
      {"alibi_sign_flipped", {"alibi_equals_bias", "matches_oracle"}},
      {"sinks_ignored", {"sink_equals_extra_key", "matches_oracle"}},
      {"lse_base2", {"lse_matches_oracle"}},
      // Backward faults (issue #15): each by the gradient law its fault breaks
      // on almost every case (tests/core/grad_laws_test.cpp shows each on a
      // plain backward with the same fault).
      {"grad_no_rowsum", {"grad_matches_oracle", "grad_key_shift_zero", "grad_consistent_with_forward"}},
      {"grad_dq_unscaled", {"grad_matches_oracle", "grad_consistent_with_forward"}},
      {"grad_gqa_first_head", {"grad_matches_oracle", "grad_gqa_sums_group"}},
      {"grad_dv_unnormalised", {"grad_matches_oracle", "grad_values_sum", "grad_consistent_with_forward"}},
      {"grad_nan_empty_rows", {"grad_empty_rows_zero"}},
      {"grad_softcap_derivative_dropped", {"grad_matches_oracle", "grad_consistent_with_forward"}},
      {"grad_dk_accumulated", {"grad_matches_oracle", "grad_linear_in_dout", "grad_key_shift_zero"}},
  };
  return pins;
}

class ZooMember : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooMember, IsCaughtByItsPinnedLaws) {
  auto impl = make_builtin(GetParam());
  ASSERT_NE(impl, nullptr);
  const auto pin = pinned_laws().find(GetParam());
  ASSERT_NE(pin, pinned_laws().end()) << GetParam() << " has no pinned laws: add the laws that must catch it";
  const RunOptions options = testing::property_options();
  for (const std::string& name : pin->second) {
    const Law* law = find_law(name);
    ASSERT_NE(law, nullptr) << name;
    const LawReport r = run_law(*law, *impl, options);
    EXPECT_EQ(r.status, LawStatus::fail) << GetParam() << " is no longer caught by " << name << ": " << r.message;
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooMember, ::testing::ValuesIn(zoo_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The founding case: the unscaled layer loses the query's influence and the
// "fix" no longer produces weights that sum to one.
TEST(FoundingCase, UnscaledLayerFailsQuerySensitivity) {
  auto impl = make_builtin("seed_unscaled");
  const LawReport r = run_law(*find_law("query_sensitivity"), *impl, testing::property_options());
  ASSERT_EQ(r.status, LawStatus::fail) << r.message;
  EXPECT_NE(r.message.find("head_dim"), std::string::npos) << r.message;
}

TEST(FoundingCase, SoftmaxBypassFailsWeightsOrHull) {
  auto impl = make_builtin("seed_softmax_bypass");
  const RunOptions o = testing::property_options();
  const LawReport sum = run_law(*find_law("weights_sum_to_one"), *impl, o);
  const LawReport hull = run_law(*find_law("output_in_value_hull"), *impl, o);
  EXPECT_TRUE(sum.status == LawStatus::fail || hull.status == LawStatus::fail);
}

}  // namespace
}  // namespace attncheck
