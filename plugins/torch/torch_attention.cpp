// libtorch_attention: libtorch 1.13's scaled dot-product attention behind the
// pinned plugin ABI (attncheck/plugin.h), so that attncheck checks a real
// third-party implementation rather than one of ours.
//
// Entry point wrapped: at::_scaled_dot_product_attention (ATen/ops/
// _scaled_dot_product_attention.h in 1.13):
//   (query, key, value, attn_mask = {}, dropout_p = 0, need_attn_weights = false,
//    is_causal = false) -> (output, attn_weights)
// On CPU 1.13 has no fused kernel for it: the computation is the math path
// (scale q, matmul, add the -inf mask, softmax, matmul; from upstream's
// attention.cpp as remembered, consistent with every experiment here). It is the only
// libtorch entry point this adapter calls besides tensor plumbing (from_blob,
// ones/tril, logical_and, mul, contiguous, to) and torch::set_num_threads.
//
// How each ABI field is mapped (docs/torch-findings.md says how each was verified):
//   dtype     F32 -> kFloat, F64 -> kDouble, BF16 -> kBFloat16 (libtorch's
//             at::BFloat16 is the raw 16 bits, so the call's uint16_t buffers are
//             used as they are). F16 -> ATTNCHECK_UNSUPPORTED: 1.13's CPU bmm is
//             not implemented for Half ("bmm" not implemented for 'Half').
//   shapes    q [batch, heads, q_len, head_dim], k [batch, heads, kv_len, head_dim],
//             v [batch, heads, kv_len, value_dim]: from_blob over the call's
//             buffers, no copy (they are contiguous row-major, exactly ATen's
//             default strides). value_dim may differ from head_dim.
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
//             causal mask. In 1.13 a bool attn_mask means True = takes part in
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
//   out       the output tensor, made contiguous in the call's dtype, is copied
//             into call->out (batch*heads*q_len*value_dim elements).
//   errors    c10::Error and std::exception -> return 2 with the message in err.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/ops/_scaled_dot_product_attention.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string>

#include "attncheck/plugin.h"

namespace {

// Copies `message` into the checker's err buffer, truncated and NUL-terminated.
// libtorch's messages carry a C++ backtrace after the first line: keep the first
// line only, which is what a report needs.
void set_error(char* err, size_t err_len, const std::string& message) {
  if (!err || err_len == 0) return;
  std::string first = message.substr(0, message.find('\n'));
  std::snprintf(err, err_len, "%s", first.c_str());
}

// The libtorch element type for an ABI dtype; nullopt for the one 1.13's CPU
// path cannot compute (F16).
std::optional<at::ScalarType> torch_dtype(attncheck_dtype dtype) {
  switch (dtype) {
    case ATTNCHECK_F32: return at::kFloat;
    case ATTNCHECK_F64: return at::kDouble;
    case ATTNCHECK_BF16: return at::kBFloat16;
    case ATTNCHECK_F16: return std::nullopt;
  }
  return std::nullopt;
}

// A view of one of the call's read-only buffers as a tensor of `sizes`. from_blob
// does not own or copy the memory; the tensor lives only inside forward().
at::Tensor view(const void* data, at::IntArrayRef sizes, at::ScalarType type) {
  return at::from_blob(const_cast<void*>(data), sizes, at::TensorOptions().dtype(type));
}

// The explicit boolean mask [batch, heads, q_len, kv_len] (True = may attend) for
// everything the call restricts, or an undefined tensor when nothing is restricted
// or is_causal alone expresses it (TOP_LEFT without a mask).
at::Tensor explicit_mask(const attncheck_call& c) {
  const bool causal_as_flag = c.causal == ATTNCHECK_CAUSAL_TOP_LEFT && !c.mask;
  at::Tensor allow;
  if (c.mask) {
    // [batch, heads, q_len, kv_len] uint8, nonzero = may attend.
    allow = view(c.mask, {c.batch, c.heads, c.q_len, c.kv_len}, at::kByte).ne(0);
  }
  if (c.causal != ATTNCHECK_CAUSAL_NONE && !causal_as_flag) {
    // [q_len, kv_len]; tril(d) keeps j <= i + d: d = 0 is TOP_LEFT,
    // d = kv_len - q_len is BOTTOM_RIGHT, exactly as the ABI states them.
    const int64_t diagonal = c.causal == ATTNCHECK_CAUSAL_BOTTOM_RIGHT ? c.kv_len - c.q_len : 0;
    at::Tensor causal = at::ones({c.q_len, c.kv_len}, at::TensorOptions().dtype(at::kBool)).tril(diagonal);
    allow = allow.defined() ? at::logical_and(allow, causal) : causal.expand({c.batch, c.heads, c.q_len, c.kv_len});
  }
  return allow;
}

// Multiplies q (or, failing that, k) by `factor`, in their dtype, into a new
// tensor (the call's buffers are never written). The fold is the adapter's
// doing, not libtorch's: when it would overflow an element that was finite
// (q = 2e307, factor 2.2 in f64) it is not used, since 1.13 itself, applying
// 1/sqrt(head_dim) <= 1 to q, never overflows there. Returns false when both
// q and k would overflow.
bool fold_scale(at::Tensor& q, at::Tensor& k, double factor) {
  for (at::Tensor* t : {&q, &k}) {
    at::Tensor folded = t->mul(factor);
    const bool overflowed = at::logical_and(at::isfinite(*t), at::isfinite(folded).logical_not()).any().item<bool>();
    if (!overflowed) {
      *t = folded;
      return true;
    }
  }
  return false;
}

int forward(const attncheck_call* call, char* err, size_t err_len) {
  try {
    // The checker runs plugins in a child process on a small machine: one
    // intra-op thread keeps libtorch from oversubscribing it.
    at::set_num_threads(1);

    const attncheck_call& c = *call;
    const std::optional<at::ScalarType> type = torch_dtype(c.dtype);
    if (!type) {
      set_error(err, err_len,
                "libtorch 1.13 has no CPU half-precision matmul (\"bmm\" not implemented for 'Half'): f16 unsupported");
      return ATTNCHECK_UNSUPPORTED;
    }

    at::Tensor q = view(c.q, {c.batch, c.heads, c.q_len, c.head_dim}, *type);
    const at::Tensor v = view(c.v, {c.batch, c.heads, c.kv_len, c.value_dim}, *type);

    at::Tensor k = view(c.k, {c.batch, c.heads, c.kv_len, c.head_dim}, *type);
    // Fold the requested scale into q (see the header comment): libtorch then
    // multiplies q by 1/sqrt(head_dim), and factor / sqrt(head_dim) = scale.
    if (!std::isnan(c.scale)) {
      const double factor = c.scale * std::sqrt(static_cast<double>(c.head_dim));
      if (factor != 1.0 && !fold_scale(q, k, factor)) {
        set_error(err, err_len,
                  "libtorch 1.13 has no scale argument, and folding scale * sqrt(head_dim) into q or k "
                  "overflows both: this scale cannot be expressed");
        return ATTNCHECK_UNSUPPORTED;
      }
    }

    const at::Tensor mask = explicit_mask(c);
    const bool is_causal = c.causal == ATTNCHECK_CAUSAL_TOP_LEFT && !c.mask;
    c10::optional<at::Tensor> attn_mask;
    if (mask.defined()) attn_mask = mask;

    auto result = at::_scaled_dot_product_attention(q, k, v, attn_mask, /*dropout_p=*/0.0,
                                                    /*need_attn_weights=*/false, is_causal);
    // [batch, heads, q_len, value_dim], in the call's dtype and contiguous.
    const at::Tensor out = std::get<0>(result).to(*type).contiguous();
    const int64_t expected = c.batch * c.heads * c.q_len * c.value_dim;
    if (out.numel() != expected) {
      set_error(err, err_len,
                "libtorch returned " + std::to_string(out.numel()) + " elements, expected " + std::to_string(expected));
      return 2;
    }
    std::memcpy(c.out, out.data_ptr(), static_cast<size_t>(expected) * out.element_size());
    return ATTNCHECK_OK;
  } catch (const c10::Error& e) {
    set_error(err, err_len, std::string("libtorch: ") + e.what_without_backtrace());
    return 2;
  } catch (const std::exception& e) {
    set_error(err, err_len, std::string("libtorch adapter: ") + e.what());
    return 2;
  }
}

const attncheck_impl kImpl = {ATTNCHECK_ABI_VERSION, "libtorch-sdpa-1.13", forward};

}  // namespace

extern "C" __attribute__((visibility("default"))) const attncheck_impl* attncheck_plugin_v1(void) { return &kImpl; }
