// libtorch_attention: libtorch 1.13's scaled dot-product attention behind the
// pinned plugin ABI, version 3 (attncheck/plugin_v3.h), 2 (plugin_v2.h) and 1
// (attncheck/plugin.h), so that attncheck checks a real third-party implementation
// rather than one of ours.
//
// Version 3 adds nothing 1.13 can compute but two promises (docs/torch-findings.md,
// "ABI version 3"). No feature: 1.13's SDPA takes no cu_seqlens (varlen attention is
// FlashAttention's CUDA kernel, _flash_scaled_dot_product_attention, CUDA only), no
// block table, no K/V format (no float8 dtype before 2.1; its quantized tensors do not
// reach SDPA), no per-(batch, head) slopes, no separate V view or stride-0 expansion of
// its own; unpacking or gathering in the adapter would be the adapter's arithmetic, as
// GQA would be (below). Promised, and measured before it was:
//   DETERMINISTIC, DETERMINISTIC_BACKWARD   with the adapter's one intra-op thread
//             the CPU math path gives bit-identical out and gradients when only the
//             buffers' addresses and the bytes that must not matter change
//             (rerun_bit_identical and backward_rerun_bit_identical, seeds 1 to 21, 3,900
//             cases each, f32, f64, bf16).
// Not promised: BATCH_INVARIANT. A sequence's output depends on the batch around it
// by up to 3 ulp in f32 and f64 (1 in bf16): batch_invariance failed at
// every seed tried when a trial build declared it.
// Every added field of a call is then neutral; a call that is not is answered 2
// naming the field, never computed as if it were.
//
// Version 2 declares only what libtorch 1.13 does itself (features below):
//   STRIDES   q, k, v are from_blob views with the call's sizes and strides (any
//             axis order, gaps): ATen reads them through their strides, no copy by
//             the adapter. The output is written with copy_ into a from_blob view of
//             call->out with its strides, which touches the live elements only.
//   MASK      the uint8 mask view (strides, 0 = broadcast) becomes the bool attn_mask.
//   CAUSAL    as in version 1 (below).
//   BIAS      the additive bias, a view in the call's dtype (strides, 0 = broadcast),
//             is the float attn_mask, which 1.13 adds to the scaled scores; -inf
//             there hides a key the way the bool mask's -inf does. 1.13 takes one
//             attn_mask, so with a mask or a causal rule as well the bias gets -inf
//             where those hide a key (bias.masked_fill(!allow, -inf)): exactly the
//             conversion 1.13 applies to a bool mask itself (zeros, -inf where False).
// Not declared, because 1.13 has no such input and the adapter would have to compute
// it itself, so the checker would check the adapter's arithmetic instead of libtorch's:
//   GQA       1.13's SDPA needs as many k/v heads as q heads (enable_gqa came in
//             2.5); repeat_interleave of K and V would be the adapter's emulation.
//   LENGTHS, WINDOW   would be masks built by the adapter.
//   SOFTCAP, SINKS    have no place in 1.13's math path (tanh before the mask add,
//             an extra softmax term).
//   ALIBI     would be a bias built by the adapter.
//   LSE       1.13 returns the attention weights, not the log-sum-exp.
// A call that uses an undeclared feature anyway (the checker never sends one) is
// ATTNCHECK_UNSUPPORTED. The version-1 entry translates its dense call into a dense
// version-2 call and computes it with the same code, exactly as before.
//
// Gradients: version 2's backward (torch_backward.cpp) is libtorch's own autograd
// through the same call, in f32, f64 and bf16. The call's arguments are built once, for
// both, in sdpa_call.cpp (the mapping below is what it does).
//
// Entry point wrapped: at::_scaled_dot_product_attention (ATen/ops/
// _scaled_dot_product_attention.h in 1.13):
//   (query, key, value, attn_mask = {}, dropout_p = 0, need_attn_weights = false,
//    is_causal = false) -> (output, attn_weights)
// On CPU 1.13 has no fused kernel for it: the computation is the math path
// (scale q, matmul, add the -inf mask, softmax, matmul; from upstream's
// attention.cpp as remembered, consistent with every experiment here; with
// requires_grad its output is bit for bit the same, tests/plugins/torch_sdpa_paths_test).
// It is the only libtorch entry point this adapter calls besides tensor plumbing
// (from_blob, ones/tril, ne, logical_and, logical_not, masked_fill, mul, copy_),
// torch::autograd::grad (backward) and torch::set_num_threads.
//
// How each ABI field is mapped (docs/torch-findings.md says how each was verified):
//   dtype     F32 -> kFloat, F64 -> kDouble, BF16 -> kBFloat16 (libtorch's
//             at::BFloat16 is the raw 16 bits, so the call's uint16_t buffers are
//             used as they are). F16 -> ATTNCHECK_UNSUPPORTED: 1.13's CPU bmm is
//             not implemented for Half ("bmm" not implemented for 'Half').
//   shapes    q [batch, heads, q_len, head_dim], k [batch, heads, kv_len, head_dim],
//             v [batch, heads, kv_len, value_dim]: from_blob over the call's
//             buffers with the call's strides (a v1 call's are ATen's default,
//             row-major ones), no copy. value_dim may differ from head_dim.
//   causal    TOP_LEFT with no mask -> is_causal = true: 1.13's is_causal builds
//             ones({q_len, kv_len}).tril(), i.e. key j visible to query i iff
//             j <= i, which is the ABI's TOP_LEFT also when q_len != kv_len
//             (verified by experiment against an explicit tril mask, exact match,
//             and against bottom-right, which differs). 1.13 refuses is_causal
//             together with an attn_mask, so TOP_LEFT with a mask and every
//             BOTTOM_RIGHT become part of an explicit boolean mask:
//             TOP_LEFT = tril(0), BOTTOM_RIGHT = tril(kv_len - q_len).
//   mask      the ABI's uint8 mask [batch, heads, q_len, kv_len] (nonzero = may
//             attend) becomes a bool tensor of the same shape, and-ed with the
//             causal mask (and, with a bias, -inf in the bias where it is False). In 1.13 a bool attn_mask means True = takes part in
//             attention (it is turned into an additive mask with -inf where
//             False); verified by experiment against a hand-written softmax.
//   scale     1.13's function has no scale argument: it always uses
//             1/sqrt(head_dim). A requested scale s is folded into q:
//             q' = q * (s * sqrt(head_dim)), computed in q's dtype, so that
//             libtorch's 1/sqrt(head_dim) times the folded factor is s. This adds
//             one rounding of q per element (the same a caller of 1.13 has to
//             pay); it is skipped when the factor is exactly 1. When the fold
//             would overflow q (huge q, factor > 1) it goes into k instead
//             (s q.k is the same product); when both would overflow the call is
//             ATTNCHECK_UNSUPPORTED, because that overflow would be the adapter's,
//             not libtorch's. NaN scale (= "your default") means no folding.
//   out       the output tensor [batch, heads, q_len, value_dim] is copied (copy_,
//             converting to the call's dtype) into the view of call->out.
//   errors    c10::Error and std::exception -> return 2 with the message in err.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "attncheck/plugin_v2.h"
#include "attncheck/plugin_v3.h"
#include "common/v1_as_v2.h"
#include "sdpa_call.h"
#include "torch_backward.h"

namespace {

using namespace torch_plugin;

int forward_v2(const attncheck_call_v2* call, char* err, size_t err_len) {
  try {
    // The checker runs plugins in a child process on a small machine: one
    // intra-op thread keeps libtorch from oversubscribing it.
    at::set_num_threads(1);

    const attncheck_call_v2& c = *call;
    const std::optional<at::ScalarType> type = call_dtype(c, err, err_len);
    if (!type) return ATTNCHECK_UNSUPPORTED;

    SdpaArgs args;
    const int rc = sdpa_args(c, *type, view(c.q.data, {c.batch, c.heads, c.q_len, c.head_dim}, c.q.stride, *type),
                             view(c.k.data, {c.batch, c.heads, c.kv_len, c.head_dim}, c.k.stride, *type),
                             view(c.v.data, {c.batch, c.heads, c.kv_len, c.value_dim}, c.v.stride, *type), args, err,
                             err_len);
    if (rc != ATTNCHECK_OK) return rc;
    // [batch, heads, q_len, value_dim].
    const at::Tensor out = sdpa_output(args);
    const std::vector<int64_t> expected = {c.batch, c.heads, c.q_len, c.value_dim};
    if (out.sizes() != at::IntArrayRef(expected)) {
      set_error(err, err_len, "libtorch returned an output of shape " + c10::str(out.sizes()) + ", expected " +
                                  c10::str(at::IntArrayRef(expected)));
      return 2;
    }
    // Written through out's strides: the gaps between its elements stay as they are.
    view(c.out.data, expected, c.out.stride, *type).copy_(out);
    return ATTNCHECK_OK;
  } catch (const c10::Error& e) {
    set_error(err, err_len, std::string("libtorch: ") + e.what_without_backtrace());
    return 2;
  } catch (const std::exception& e) {
    set_error(err, err_len, std::string("libtorch adapter: ") + e.what());
    return 2;
  }
}

// A v1 call is a dense v2 call with every other field neutral.
int forward_v1(const attncheck_call* c1, char* err, size_t err_len) {
  const attncheck_call_v2 c = attncheck_plugins::v1_as_v2(*c1);
  return forward_v2(&c, err, err_len);
}

// The version-3 field of `c` that is not neutral, or nullptr: this adapter
// declares no version-3 feature, so the checker sends none.
const char* v3_field_in_use(const attncheck_call_v3& c) {
  if (c.cu_seqlens_q || c.cu_seqlens_k || c.total_q || c.total_k) return "cu_seqlens_q/k, total_q/k (PACKED)";
  if (c.block_table || c.max_pages_per_seq || c.num_pages || c.page_size) return "block_table (PAGED)";
  if (c.k_format != ATTNCHECK_KV_DTYPE || c.v_format != ATTNCHECK_KV_DTYPE || c.k_scale.data || c.v_scale.data)
    return "k_format/v_format, k_scale/v_scale (KV_FORMATS)";
  if (c.alibi_batch_stride) return "alibi_batch_stride (ALIBI_BATCH)";
  return nullptr;
}

int refuse_v3_field(const char* field, char* err, size_t err_len) {
  set_error(err, err_len, std::string(field) + " is not neutral, but the libtorch adapter declares no version-3 feature");
  return 2;
}

int forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  if (const char* field = v3_field_in_use(*call)) return refuse_v3_field(field, err, err_len);
  return forward_v2(&call->v2, err, err_len);
}

int backward_v3(const attncheck_call_v3* call, const attncheck_grad* grad, char* err, size_t err_len) {
  if (const char* field = v3_field_in_use(*call)) return refuse_v3_field(field, err, err_len);
  return backward_v2(&call->v2, grad, err, err_len);
}

const attncheck_impl kImplV1 = {ATTNCHECK_ABI_VERSION, "libtorch-sdpa-1.13", forward_v1};
const attncheck_impl_v2 kImplV2 = {ATTNCHECK_ABI_VERSION_2, kFeatures, "libtorch-sdpa-1.13", forward_v2,
                                   backward_v2};
// Version 2's features, no format or numerics bit, the two determinism promises.
const attncheck_impl_v3 kImplV3 = {ATTNCHECK_ABI_VERSION_3,
                                   kFeatures,
                                   0,
                                   0,
                                   ATTNCHECK_PROMISE_DETERMINISTIC | ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD,
                                   "libtorch-sdpa-1.13",
                                   forward_v3,
                                   backward_v3};

}  // namespace

extern "C" __attribute__((visibility("default"))) const attncheck_impl* attncheck_plugin_v1(void) { return &kImplV1; }
extern "C" __attribute__((visibility("default"))) const attncheck_impl_v2* attncheck_plugin_v2(void) { return &kImplV2; }
extern "C" __attribute__((visibility("default"))) const attncheck_impl_v3* attncheck_plugin_v3(void) { return &kImplV3; }
