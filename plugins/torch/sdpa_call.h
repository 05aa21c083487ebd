// What the libtorch adapter's forward and backward share (torch_attention.cpp,
// torch_backward.cpp): one ABI v2 call turned into the arguments of libtorch 1.13's
// at::_scaled_dot_product_attention, so that backward differentiates exactly the
// computation forward runs. The mapping of each field is described in
// torch_attention.cpp's header comment.
#ifndef ATTNCHECK_PLUGINS_TORCH_SDPA_CALL_H
#define ATTNCHECK_PLUGINS_TORCH_SDPA_CALL_H

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "attncheck/plugin_v2.h"

namespace torch_plugin {

// What version 2 declares: the features 1.13 computes itself.
constexpr uint32_t kFeatures =
    ATTNCHECK_FEATURE_MASK | ATTNCHECK_FEATURE_CAUSAL | ATTNCHECK_FEATURE_STRIDES | ATTNCHECK_FEATURE_BIAS;

// Copies the first line of `message` into the checker's err buffer, truncated and
// NUL-terminated (libtorch's messages carry a C++ backtrace after the first line).
void set_error(char* err, size_t err_len, const std::string& message);

// The libtorch element type for an ABI dtype; nullopt for F16, which 1.13's CPU
// path cannot compute ("bmm" not implemented for 'Half').
std::optional<at::ScalarType> torch_dtype(attncheck_dtype dtype);

// A tensor of `sizes` over the call's memory at `data`, element (b, h, r, c) at
// data + sum of index * stride, exactly as the ABI's views say. from_blob neither owns
// nor copies the memory; the tensor must not outlive the call.
at::Tensor view(const void* data, at::IntArrayRef sizes, const int64_t (&stride)[4], at::ScalarType type);

// The first feature the call uses that this adapter does not declare, or nullptr.
const char* undeclared_feature(const attncheck_call_v2& c);

// The libtorch element type a forward or backward call computes in, or
// nullopt with the reason in err when the adapter cannot take the call (F16,
// or a feature it does not declare): answer ATTNCHECK_UNSUPPORTED then.
std::optional<at::ScalarType> call_dtype(const attncheck_call_v2& c, char* err, size_t err_len);

// The arguments of at::_scaled_dot_product_attention for one call:
//   q [batch, heads, q_len, head_dim]    the call's q, times the folded scale factor
//   k [batch, heads, kv_len, head_dim]   the call's k (or k times the factor)
//   v [batch, heads, kv_len, value_dim]  the call's v
//   attn_mask                            bool (True = may attend) or the float bias
//   is_causal                            TOP_LEFT alone
struct SdpaArgs {
  at::Tensor q, k, v;
  c10::optional<at::Tensor> attn_mask;
  bool is_causal = false;
};

// Builds the arguments from the call's q, k, v given as tensors (views of the call's
// buffers; backward passes them with requires_grad, and the scale fold and everything
// after it are then recorded by autograd). Returns ATTNCHECK_OK, or
// ATTNCHECK_UNSUPPORTED with the reason in err (a scale whose fold overflows both q
// and k).
int sdpa_args(const attncheck_call_v2& c, at::ScalarType type, const at::Tensor& q, const at::Tensor& k,
              const at::Tensor& v, SdpaArgs& args, char* err, size_t err_len);

// The output [batch, heads, q_len, value_dim] of 1.13's attention on `args`.
at::Tensor sdpa_output(const SdpaArgs& args);

}  // namespace torch_plugin

#endif
