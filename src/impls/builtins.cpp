#include "impls/builtins.h"

#include "impls/kernels.h"
#include "problem/problem.h"

namespace attncheck {

const std::vector<BuiltinInfo>& builtins() {
  using enum BuiltinKind;
  static const std::vector<BuiltinInfo> all = {
      {"reference", reference, "whole-matrix attention with Eigen: S = scale Q K^T, stable softmax, P V",
       reference_forward, nullptr, reference_forward_v2, kAllFeatures},
      {"naive", reference, "the founding C# loops made correct: one query row at a time, scaled, max-subtracted",
       naive_forward, nullptr, naive_forward_v2, kAllFeatures},
      {"online", reference, "tiled streaming softmax (FlashAttention order): running max, sum and rescaled output",
       online_forward, nullptr, online_forward_v2, kAllFeatures},
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
  };
  return all;
}

const BuiltinInfo* find_builtin(std::string_view name) {
  for (const BuiltinInfo& b : builtins())
    if (b.name == name) return &b;
  return nullptr;
}

}  // namespace attncheck
