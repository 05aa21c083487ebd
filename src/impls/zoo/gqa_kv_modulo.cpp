// Zoo (ABI v2): query head h reads kv head h % kv_heads instead of h / (heads / kv_heads).
// The usual slip when a kernel's GQA indexing is written from a broadcast view:
// right when kv_heads == heads or kv_heads == 1, wrong for every other group size.
#include "impls/kernels.h"
#include "impls/zoo/knobbed_attention_v2.h"

namespace attncheck {

int gqa_kv_modulo_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len) {
  return detail::knobbed_forward_v2(call, err, err_len, {.gqa_modulo = true});
}

int gqa_kv_modulo_forward(const attncheck_call* call, char* err, size_t err_len) {
  return forward_v1_via_v2(call, err, err_len, gqa_kv_modulo_forward_v2);
}

}  // namespace attncheck
