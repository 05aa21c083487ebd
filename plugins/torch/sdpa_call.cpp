// One ABI v2 call as the arguments of libtorch 1.13's attention (sdpa_call.h); the
// mapping of each field is explained in torch_attention.cpp's header comment.
#include "sdpa_call.h"

#include <ATen/ops/_scaled_dot_product_attention.h>

#include <cmath>
#include <cstdio>
#include <limits>

namespace torch_plugin {

void set_error(char* err, size_t err_len, const std::string& message) {
  if (!err || err_len == 0) return;
  std::string first = message.substr(0, message.find('\n'));
  std::snprintf(err, err_len, "%s", first.c_str());
}

std::optional<at::ScalarType> torch_dtype(attncheck_dtype dtype) {
  switch (dtype) {
    case ATTNCHECK_F32: return at::kFloat;
    case ATTNCHECK_F64: return at::kDouble;
    case ATTNCHECK_BF16: return at::kBFloat16;
    case ATTNCHECK_F16: return std::nullopt;
  }
  return std::nullopt;
}

at::Tensor view(const void* data, at::IntArrayRef sizes, const int64_t (&stride)[4], at::ScalarType type) {
  return at::from_blob(const_cast<void*>(data), sizes, at::IntArrayRef(stride, 4), at::TensorOptions().dtype(type));
}

const char* undeclared_feature(const attncheck_call_v2& c) {
  if (c.kv_heads != c.heads) return "GQA (kv_heads < heads)";
  if (c.q_lens || c.kv_lens) return "LENGTHS";
  if (c.window_left >= 0 || c.window_right >= 0) return "WINDOW";
  if (c.softcap != 0) return "SOFTCAP";
  if (c.alibi_slopes) return "ALIBI";
  if (c.sinks) return "SINKS";
  if (c.lse) return "LSE";
  return nullptr;
}

std::optional<at::ScalarType> call_dtype(const attncheck_call_v2& c, char* err, size_t err_len) {
  const std::optional<at::ScalarType> type = torch_dtype(c.dtype);
  if (!type) {
    set_error(err, err_len,
              "libtorch 1.13 has no CPU half-precision matmul (\"bmm\" not implemented for 'Half'): f16 unsupported");
    return std::nullopt;
  }
  if (const char* feature = undeclared_feature(c)) {
    set_error(err, err_len, std::string("libtorch 1.13 adapter does not declare ") + feature);
    return std::nullopt;
  }
  return type;
}

namespace {

// The explicit boolean mask [batch, heads, q_len, kv_len] (True = may attend) for
// what the mask and the causal rule restrict, or an undefined tensor when nothing is
// restricted or is_causal alone expresses it (TOP_LEFT with no mask and no bias).
at::Tensor explicit_allow(const attncheck_call_v2& c, bool causal_as_flag) {
  at::Tensor allow;
  if (c.mask.data) {
    // [batch, heads, q_len, kv_len] uint8 through its strides (0 = broadcast), nonzero = may attend.
    allow = view(c.mask.data, {c.batch, c.heads, c.q_len, c.kv_len}, c.mask.stride, at::kByte).ne(0);
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

// The attn_mask 1.13 gets: the bias (float, added to the scores) with -inf where
// `allow` is False, else the bool `allow` itself, else none.
c10::optional<at::Tensor> attn_mask_of(const attncheck_call_v2& c, at::ScalarType type, const at::Tensor& allow) {
  if (c.bias.data) {
    // [batch, heads, q_len, kv_len] in the call's dtype, through its strides (0 = broadcast).
    at::Tensor bias = view(c.bias.data, {c.batch, c.heads, c.q_len, c.kv_len}, c.bias.stride, type);
    if (allow.defined()) bias = bias.masked_fill(allow.logical_not(), -std::numeric_limits<double>::infinity());
    return bias;
  }
  if (allow.defined()) return allow;
  return c10::nullopt;
}

// Multiplies q (or, failing that, k) by `factor`, in their dtype, into a new
// tensor (the call's buffers are never written). The fold is the adapter's
// doing, not libtorch's: when it would overflow an element that was finite
// (q = 2e307, factor 2.2 in f64) it is not used, since 1.13 itself, applying
// 1/sqrt(head_dim) <= 1 to q, never overflows there. Returns false when both
// q and k would overflow. With requires_grad, autograd records the mul, so the
// gradient of the folded tensor carries the factor back to the call's q (or k).
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

}  // namespace

int sdpa_args(const attncheck_call_v2& c, at::ScalarType type, const at::Tensor& q, const at::Tensor& k,
              const at::Tensor& v, SdpaArgs& args, char* err, size_t err_len) {
  args.q = q;
  args.k = k;
  args.v = v;
  // Fold the requested scale into q (see torch_attention.cpp): libtorch then
  // multiplies q by 1/sqrt(head_dim), and factor / sqrt(head_dim) = scale.
  if (!std::isnan(c.scale)) {
    const double factor = c.scale * std::sqrt(static_cast<double>(c.head_dim));
    if (factor != 1.0 && !fold_scale(args.q, args.k, factor)) {
      set_error(err, err_len,
                "libtorch 1.13 has no scale argument, and folding scale * sqrt(head_dim) into q or k "
                "overflows both: this scale cannot be expressed");
      return ATTNCHECK_UNSUPPORTED;
    }
  }
  // 1.13 refuses is_causal together with an attn_mask: TOP_LEFT is the flag only alone.
  args.is_causal = c.causal == ATTNCHECK_CAUSAL_TOP_LEFT && !c.mask.data && !c.bias.data;
  args.attn_mask = attn_mask_of(c, type, explicit_allow(c, args.is_causal));
  return ATTNCHECK_OK;
}

at::Tensor sdpa_output(const SdpaArgs& args) {
  auto result = at::_scaled_dot_product_attention(args.q, args.k, args.v, args.attn_mask, /*dropout_p=*/0.0,
                                                  /*need_attn_weights=*/false, args.is_causal);
  return std::get<0>(result);
}

}  // namespace torch_plugin
