#include "impls/builtins.h"

#include "impls/kernels.h"
#include "problem/problem.h"

namespace attncheck {

const std::vector<BuiltinInfo>& builtins() {
  using enum BuiltinKind;
  static const std::vector<BuiltinInfo> all = {
      {"reference", reference, "whole-matrix attention with Eigen: S = scale Q K^T, stable softmax, P V",
       reference_forward, nullptr, reference_forward_v2, kAllFeatures, reference_backward_v2},
      {"naive", reference, "the founding C# loops made correct: one query row at a time, scaled, max-subtracted",
       naive_forward, nullptr, naive_forward_v2, kAllFeatures, naive_backward_v2},
      {"online", reference, "tiled streaming softmax (FlashAttention order): running max, sum and rescaled output",
       online_forward, nullptr, online_forward_v2, kAllFeatures, online_backward_v2},
      {"seed_unscaled", zoo, "the founding layer: logits never divided by sqrt(head_dim)", seed_unscaled_forward},
      {"seed_softmax_bypass", zoo, "the founding \"fix\": softmax dropped, out = sum over visible keys of V * Q",
       seed_softmax_bypass_forward},
      {"no_max_subtraction", zoo, "softmax without subtracting the row max: exp overflows to inf/NaN for large logits",
       no_max_subtraction_forward},
      {"scale_inverse_d", zoo, "default scale 1/head_dim instead of 1/sqrt(head_dim)", scale_inverse_d_forward},
      {"causal_off_by_one", zoo, "causal boundary one key late: each query also sees the next key",
       causal_off_by_one_forward},
      {"last_key_dropped", zoo, "key loop stops one short: the last key is never attended", last_key_dropped_forward},
      {"kv_swapped", zoo, "K and V exchanged: logits from q . v, output mixes K rows", kv_swapped_forward},
      {"batch_head_swapped", zoo, "stride mix-up: the block of (batch b, head h) is written at (batch h, head b)",
       batch_head_swapped_forward},
      {"nondeterministic_order", zoo, "keys summed in an order that changes between calls: last bits differ",
       nondeterministic_order_forward, nondeterministic_order_reset},
      {"gqa_kv_modulo", zoo, "GQA indexed modulo: query head h reads kv head h % kv_heads, not h / (heads / kv_heads)",
       gqa_kv_modulo_forward, nullptr, gqa_kv_modulo_forward_v2, kAllFeatures},
      {"strides_ignored", zoo, "declares STRIDES but reads q, k, v as dense BHSD whatever their strides",
       strides_ignored_forward, nullptr, strides_ignored_forward_v2, kAllFeatures},
      {"padding_keys_attended", zoo, "kv_lens ignored in the key loop: padding keys j >= kv_lens[b] are attended",
       padding_keys_attended_forward, nullptr, padding_keys_attended_forward_v2, kAllFeatures},
      {"window_off_by_one", zoo, "window_left = W admits W keys on the left instead of W + 1",
       window_off_by_one_forward, nullptr, window_off_by_one_forward_v2, kAllFeatures},
      {"window_top_left", zoo, "window and ALiBi aligned to d_i = i even under bottom-right and no causal rule",
       window_top_left_forward, nullptr, window_top_left_forward_v2, kAllFeatures},
      {"softcap_after_bias", zoo, "soft-cap applied after adding the bias and ALiBi instead of to the score alone",
       softcap_after_bias_forward, nullptr, softcap_after_bias_forward_v2, kAllFeatures},
      {"alibi_sign_flipped", zoo, "ALiBi with the wrong sign: + slope * |d_i - j|",
       alibi_sign_flipped_forward, nullptr, alibi_sign_flipped_forward_v2, kAllFeatures},
      {"sinks_ignored", zoo, "declares SINKS but leaves exp(sink) out of the softmax denominator",
       sinks_ignored_forward, nullptr, sinks_ignored_forward_v2, kAllFeatures},
      {"lse_base2", zoo, "lse written as log2 of the softmax denominator instead of the natural log",
       lse_base2_forward, nullptr, lse_base2_forward_v2, kAllFeatures},
      // The backward zoo: reference's forward, reference's backward with one fault.
      {"grad_no_rowsum", zoo, "backward without the rowsum term: dS = P * dP instead of P * (dP - rowsum(dO * O))",
       reference_forward, nullptr, reference_forward_v2, kAllFeatures, grad_no_rowsum_backward_v2},
      {"grad_dq_unscaled", zoo, "backward: dQ = dS K without the softmax scale",
       reference_forward, nullptr, reference_forward_v2, kAllFeatures, grad_dq_unscaled_backward_v2},
      {"grad_gqa_first_head", zoo, "backward: a kv head's dK and dV from the first query head of its group, not the sum",
       reference_forward, nullptr, reference_forward_v2, kAllFeatures, grad_gqa_first_head_backward_v2},
      {"grad_dv_unnormalised", zoo, "backward: dV from exp(z - rowmax) without dividing by the row's sum",
       reference_forward, nullptr, reference_forward_v2, kAllFeatures, grad_dv_unnormalised_backward_v2},
      {"grad_nan_empty_rows", zoo, "backward: dq of a row that sees no key is NaN (0/0 of its empty normaliser), not 0",
       reference_forward, nullptr, reference_forward_v2, kAllFeatures, grad_nan_empty_rows_backward_v2},
      {"grad_softcap_derivative_dropped", zoo, "backward: the soft-cap's derivative 1 - tanh^2(s / softcap) left out of dS",
       reference_forward, nullptr, reference_forward_v2, kAllFeatures, grad_softcap_derivative_dropped_backward_v2},
      {"grad_dk_accumulated", zoo, "backward: dk += onto what the buffer held instead of overwritten",
       reference_forward, nullptr, reference_forward_v2, kAllFeatures, grad_dk_accumulated_backward_v2},
  };
  return all;
}

const BuiltinInfo* find_builtin(std::string_view name) {
  for (const BuiltinInfo& b : builtins())
    if (b.name == name) return &b;
  return nullptr;
}

}  // namespace attncheck
