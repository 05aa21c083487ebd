// The law catalogue, in report order. Each law lives in its own file as a
// factory `Law law_<name>()`; adding a law is one file and one line below.
#include "law_framework/law.h"

namespace attncheck {

// Softmax made visible (V = identity).
Law law_weights_sum_to_one();
Law law_weights_in_unit_interval();
Law law_masked_weights_zero();
// Numerical.
Law law_matches_oracle();
Law law_accuracy_within_typical();
Law law_finite_for_finite_inputs();
Law law_nan_propagates();
Law law_deterministic();
Law law_rerun_bit_identical();
// Metamorphic.
Law law_output_in_value_hull();
Law law_logit_shift_invariance();
Law law_scale_invariance();
Law law_value_scaling();
Law law_value_linearity();
Law law_key_permutation_invariance();
Law law_query_permutation_equivariance();
Law law_batch_head_independence();
Law law_batch_composition_independence();
Law law_batch_invariance();
// Exact special cases.
Law law_uniform_on_zero_query();
Law law_single_key_passthrough();
// Masks and causal rules.
Law law_causal_prefix_consistency();
Law law_masked_keys_ignored();
Law law_causal_equals_explicit_mask();
Law law_fully_masked_rows_zero();
// Scale.
Law law_default_scale_is_inverse_sqrt_d();
// The founding law.
Law law_query_sensitivity();
// ABI v2 features: each equals its plain form.
Law law_gqa_equals_repeated_kv();
Law law_layout_invariance();
Law law_lengths_equal_slices();
// ABI v3's packed batches.
Law law_packed_equals_padded();
Law law_slack_inert_and_untouched();
Law law_empty_sequences();
Law law_sequence_order();
Law law_bounds_inert();
Law law_window_equals_mask();
Law law_alibi_equals_bias();
// ABI v3's ALiBi slopes per (batch, head).
Law law_alibi_batch_matches_alone();
// ABI v3's K and V expanded (broadcast).
Law law_broadcast_equals_materialized();
Law law_softcap_bounds_weights();
Law law_sink_equals_extra_key();
Law law_bias_row_shift_invariance();
Law law_lse_matches_oracle();
// ABI v3's paged keys (forward).
Law law_paged_equals_contiguous();
Law law_page_permutation_bit_identical();
Law law_page_size_independence();
Law law_dead_page_bytes_inert();
Law law_unread_table_entries_inert();
Law law_page_alias_equals_copy();
// ABI v3's stored K and V formats (forward).
Law law_quantized_matches_oracle();
Law law_scale_power_of_two();
Law law_equal_values_across_formats();
Law law_dead_codes_inert();
// ABI v3's V as a view of K (MLA, forward).
Law law_mla_matches_oracle();
Law law_v_view_equals_copy();
Law law_split_consistency();
// Gradients (backward problems; skipped for an implementation without backward).
Law law_grad_matches_oracle();
Law law_grad_key_shift_zero();
Law law_grad_values_sum();
Law law_grad_linear_in_dout();
Law law_grad_consistent_with_forward();
Law law_grad_gqa_sums_group();
Law law_grad_empty_rows_zero();
Law law_grad_deterministic();
Law law_backward_rerun_bit_identical();
Law law_grad_key_permutation_equivariance();
Law law_grad_query_permutation_equivariance();
Law law_grad_layout_invariance();
// The implementation as a program.
Law law_no_crash();
Law law_no_timeout();
Law law_no_out_of_bounds_write();
Law law_writes_every_output();

const std::vector<Law>& all_laws() {
  static const std::vector<Law> laws = {
      law_weights_sum_to_one(),
      law_weights_in_unit_interval(),
      law_masked_weights_zero(),
      law_matches_oracle(),
      law_accuracy_within_typical(),
      law_finite_for_finite_inputs(),
      law_nan_propagates(),
      law_deterministic(),
      law_rerun_bit_identical(),
      law_output_in_value_hull(),
      law_logit_shift_invariance(),
      law_scale_invariance(),
      law_value_scaling(),
      law_value_linearity(),
      law_key_permutation_invariance(),
      law_query_permutation_equivariance(),
      law_batch_head_independence(),
      law_batch_composition_independence(),
      law_batch_invariance(),
      law_uniform_on_zero_query(),
      law_single_key_passthrough(),
      law_causal_prefix_consistency(),
      law_masked_keys_ignored(),
      law_causal_equals_explicit_mask(),
      law_fully_masked_rows_zero(),
      law_default_scale_is_inverse_sqrt_d(),
      law_query_sensitivity(),
      law_gqa_equals_repeated_kv(),
      law_layout_invariance(),
      law_lengths_equal_slices(),
      law_packed_equals_padded(),
      law_slack_inert_and_untouched(),
      law_empty_sequences(),
      law_sequence_order(),
      law_bounds_inert(),
      law_paged_equals_contiguous(),
      law_page_permutation_bit_identical(),
      law_page_size_independence(),
      law_dead_page_bytes_inert(),
      law_unread_table_entries_inert(),
      law_page_alias_equals_copy(),
      law_quantized_matches_oracle(),
      law_scale_power_of_two(),
      law_equal_values_across_formats(),
      law_dead_codes_inert(),
      law_mla_matches_oracle(),
      law_v_view_equals_copy(),
      law_window_equals_mask(),
      law_alibi_equals_bias(),
      law_alibi_batch_matches_alone(),
      law_broadcast_equals_materialized(),
      law_softcap_bounds_weights(),
      law_sink_equals_extra_key(),
      law_bias_row_shift_invariance(),
      law_lse_matches_oracle(),
      law_split_consistency(),
      law_grad_matches_oracle(),
      law_grad_key_shift_zero(),
      law_grad_values_sum(),
      law_grad_linear_in_dout(),
      law_grad_consistent_with_forward(),
      law_grad_gqa_sums_group(),
      law_grad_empty_rows_zero(),
      law_grad_deterministic(),
      law_backward_rerun_bit_identical(),
      law_grad_key_permutation_equivariance(),
      law_grad_query_permutation_equivariance(),
      law_grad_layout_invariance(),
      law_no_crash(),
      law_no_timeout(),
      law_no_out_of_bounds_write(),
      law_writes_every_output(),
  };
  return laws;
}

}  // namespace attncheck
