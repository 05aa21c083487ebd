// The ABI forward functions of the built-in implementations, one per file
// (impls/<name>.cpp, impls/zoo/<name>.cpp). Each has the exact signature of
// attncheck_impl::forward (or attncheck_impl_v2::forward), so a built-in is
// called exactly like a plugin.
// Listed, named and described in impls/builtins.h.
#pragma once

#include <cstddef>

#include "attncheck/plugin_v3.h"

namespace attncheck {

// References: correct, written independently so that they check each other.
int reference_forward(const attncheck_call* call, char* err, size_t err_len);
int naive_forward(const attncheck_call* call, char* err, size_t err_len);
int online_forward(const attncheck_call* call, char* err, size_t err_len);
// The same three through ABI v2, with every feature (the v1 entries above run
// these on the equivalent v2 call).
int reference_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len);
int naive_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len);
int online_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len);
// The same three through ABI v3, computing packed calls (cu_seqlens_q/k)
// too; any other v3 field not neutral is answered ATTNCHECK_UNSUPPORTED.
int reference_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);
int naive_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);
int online_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);
// Their ABI v2 backward (attncheck_impl_v2::backward), with every feature:
// reference with whole matrices, naive with loops, online as FlashAttention-2.
int reference_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t err_len);
int naive_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t err_len);
int online_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t err_len);

// The zoo: each carries one known fault, for the laws to catch.
int seed_unscaled_forward(const attncheck_call* call, char* err, size_t err_len);
int seed_softmax_bypass_forward(const attncheck_call* call, char* err, size_t err_len);
int no_max_subtraction_forward(const attncheck_call* call, char* err, size_t err_len);
int scale_inverse_d_forward(const attncheck_call* call, char* err, size_t err_len);
int causal_off_by_one_forward(const attncheck_call* call, char* err, size_t err_len);
int last_key_dropped_forward(const attncheck_call* call, char* err, size_t err_len);
int kv_swapped_forward(const attncheck_call* call, char* err, size_t err_len);
int batch_head_swapped_forward(const attncheck_call* call, char* err, size_t err_len);
int batch_group_kv_stale_forward(const attncheck_call* call, char* err, size_t err_len);
int nondeterministic_order_forward(const attncheck_call* call, char* err, size_t err_len);
// Its call counter back to 0: what a new instance of it starts from.
void nondeterministic_order_reset();
int query_tile_shared_rowsum_forward(const attncheck_call* call, char* err, size_t err_len);
int nan_key_dropped_forward(const attncheck_call* call, char* err, size_t err_len);
int split_kv_merge_unscaled_forward(const attncheck_call* call, char* err, size_t err_len);

// The v2 zoo: each declares every feature and gets exactly one of them wrong
// (impls/zoo/knobbed_attention_v2.h); the v1 entry runs the dense v2 call.
int gqa_kv_modulo_forward(const attncheck_call* call, char* err, size_t err_len);
int gqa_kv_modulo_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len);
int strides_ignored_forward(const attncheck_call* call, char* err, size_t err_len);
int strides_ignored_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len);
int padding_keys_attended_forward(const attncheck_call* call, char* err, size_t err_len);
int padding_keys_attended_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len);
int window_off_by_one_forward(const attncheck_call* call, char* err, size_t err_len);
int window_off_by_one_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len);
int window_top_left_forward(const attncheck_call* call, char* err, size_t err_len);
int window_top_left_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len);
int softcap_after_bias_forward(const attncheck_call* call, char* err, size_t err_len);
int softcap_after_bias_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len);
int alibi_sign_flipped_forward(const attncheck_call* call, char* err, size_t err_len);
int alibi_sign_flipped_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len);
int sinks_ignored_forward(const attncheck_call* call, char* err, size_t err_len);
int sinks_ignored_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len);
int lse_base2_forward(const attncheck_call* call, char* err, size_t err_len);
int lse_base2_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len);
int skipped_tile_lse_forward(const attncheck_call* call, char* err, size_t err_len);
int skipped_tile_lse_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len);

// The backward zoo: reference's forward (correct) and reference's backward
// with exactly one fault (impls/reference_backward.h's knobs).
int grad_no_rowsum_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t err_len);
int grad_dq_unscaled_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t err_len);
int grad_gqa_first_head_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err,
                                    size_t err_len);
int grad_dv_unnormalised_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err,
                                     size_t err_len);
int grad_nan_empty_rows_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err,
                                    size_t err_len);
int grad_softcap_derivative_dropped_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err,
                                                size_t err_len);
int grad_dk_accumulated_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err,
                                    size_t err_len);
int grad_dk_race_order_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err,
                                   size_t err_len);
// Its call counter back to 0: what a new instance of it starts from.
void grad_dk_race_order_reset();

}  // namespace attncheck
