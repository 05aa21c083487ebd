// Zoo (ABI v3 KV_FORMATS): the float scales of the scaled formats (FP8_E4M3, FP8_E5M2, INT8,
// INT4) are never applied: each code is read as its value times 1. FlashInfer's ragged prefill
// took k_scale and v_scale and dropped them on one path (flashinfer#4979: output about 7.5
// times too large with fp8 K and V). Q8_0, Q4_0 (their d is in the block), F16 and BF16 are
// decoded correctly. Caught by quantized_matches_oracle on every case with a scaled format
// whose scales are not all 1 (the generator's are near 2^-9 .. 2^-3: logits and values far
// off).
#include "impls/kernels.h"
#include "impls/zoo/kv_format_members.h"

namespace attncheck {

int kv_scale_ignored_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  if (!call || (!call->k_scale.data && !call->v_scale.data)) return reference_forward_v3(call, err, err_len);
  static const float kOne = 1.0f;
  attncheck_call_v3 c = *call;
  // The fault: every scale is 1 (one float, broadcast over batch, head and channel).
  if (c.k_scale.data) c.k_scale = attncheck_scale{&kOne, {0, 0, 0}};
  if (c.v_scale.data) c.v_scale = attncheck_scale{&kOne, {0, 0, 0}};
  return reference_forward_v3(&c, err, err_len);
}

}  // namespace attncheck
