// The libtorch adapter's gradients: libtorch 1.13's own autograd differentiates the
// very call forward makes (sdpa_call.h), so what attncheck checks is libtorch's
// backward of its attention, not a backward the adapter wrote.
//
//   q, k, v   from_blob views of the call's buffers through their strides, marked
//             requires_grad: autograd's leaves. They are only read (autograd writes
//             gradients into fresh tensors, never into a leaf's memory).
//   forward   sdpa_args + sdpa_output, exactly forward's code: the scale fold
//             (q * factor, or k * factor) is recorded, so its factor reaches dq (or
//             dk) by the chain rule; the mask and the bias enter as attn_mask, which
//             needs no gradient (the ABI asks none for the bias). With requires_grad
//             1.13's composite _scaled_dot_product_attention runs its math path
//             (matmul, add the -inf mask, softmax, matmul), every op of which has an
//             autograd formula; without it (forward) it dispatches to
//             _scaled_dot_product_attention_forward, on CPU the same math: with
//             requires_grad the output is bit for bit forward's and the math path's
//             (tests/plugins/torch_sdpa_paths_test.cpp, every dtype and mask kind).
//   dout      a from_blob view through its strides, passed as autograd::grad's
//             grad_outputs: the vector-Jacobian product with dout is the gradient
//             of sum(out * dout), without a reduction in the call's dtype.
//   dq, dk, dv  autograd's [batch, heads, len, dim] results, copy_-ed into from_blob
//             views of the call's outputs with their strides: only live elements are
//             written, gaps stay as they are (no LENGTHS is declared, so every row and
//             key is live).
//   out, lse  call->out holds the adapter's own forward output in a backward call: an
//             input of the call, never written (the adapter recomputes out instead, as
//             autograd needs the graph); lse is NULL (LSE is not declared).
//   scale 0   ATTNCHECK_UNSUPPORTED: the fold's factor 0 times an overflowed dS @ K is
//             NaN where the exact dq is 0 (the adapter's doing; below).
//   dtypes    F32, F64, BF16 (1.13's CPU softmax backward and bmm take BFloat16; the
//             gradients are computed in bf16 throughout, as libtorch does); F16 is
//             ATTNCHECK_UNSUPPORTED, as in forward.
// Rows that see no key are libtorch's business too, passed on unchanged: 1.13's
// forward is NaN there, and its backward makes dq of that row NaN and, through
// P^T dO and dS^T Q, dk and dv of every key of that batch and head NaN as well
// (torch_v2_backward_test, docs/torch-findings.md).
#include "torch_backward.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>

#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "sdpa_call.h"

namespace torch_plugin {

namespace {

// Copies a gradient of `sizes` into the call's output view `to`; false (with the
// reason in err) when autograd returned another shape or nothing.
bool store(const at::Tensor& gradient, const attncheck_out_view& to, const std::vector<int64_t>& sizes,
           at::ScalarType type, const char* name, char* err, size_t err_len) {
  if (!gradient.defined()) {
    set_error(err, err_len, std::string("libtorch autograd returned no gradient for ") + name);
    return false;
  }
  if (gradient.sizes() != at::IntArrayRef(sizes)) {
    set_error(err, err_len, std::string("libtorch autograd returned ") + name + " of shape " +
                                c10::str(gradient.sizes()) + ", expected " + c10::str(at::IntArrayRef(sizes)));
    return false;
  }
  // Through the view's strides: the gaps between its elements stay as they are.
  view(to.data, sizes, to.stride, type).copy_(gradient);
  return true;
}

}  // namespace

int backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t err_len) {
  try {
    at::set_num_threads(1);  // as forward: one intra-op thread in the checker's child
    const attncheck_call_v2& c = *call;
    const std::optional<at::ScalarType> type = call_dtype(c, err, err_len);
    if (!type) return ATTNCHECK_UNSUPPORTED;
    if (c.scale == 0) {
      // The fold (sdpa_call.cpp) makes q' = 0 * q, and autograd's chain rule then
      // multiplies libtorch's unscaled dS @ K by 0: NaN wherever that product overflows,
      // although the exact dq is 0. That NaN would be the adapter's, not libtorch's.
      set_error(err, err_len,
                "libtorch 1.13 has no scale argument; the adapter folds the scale into q, and for scale 0 "
                "the chain rule multiplies libtorch's unscaled dS @ K by 0 (NaN where it overflows): "
                "gradients at scale 0 cannot be expressed");
      return ATTNCHECK_UNSUPPORTED;
    }
    at::AutoGradMode grad_mode(true);  // whatever the caller's thread had set

    const std::vector<int64_t> q_sizes = {c.batch, c.heads, c.q_len, c.head_dim};
    const std::vector<int64_t> k_sizes = {c.batch, c.heads, c.kv_len, c.head_dim};
    const std::vector<int64_t> v_sizes = {c.batch, c.heads, c.kv_len, c.value_dim};
    const std::vector<int64_t> out_sizes = {c.batch, c.heads, c.q_len, c.value_dim};
    // The leaves: q [batch, heads, q_len, head_dim], k [batch, heads, kv_len, head_dim],
    // v [batch, heads, kv_len, value_dim], through the call's strides.
    const at::Tensor q = view(c.q.data, q_sizes, c.q.stride, *type).requires_grad_(true);
    const at::Tensor k = view(c.k.data, k_sizes, c.k.stride, *type).requires_grad_(true);
    const at::Tensor v = view(c.v.data, v_sizes, c.v.stride, *type).requires_grad_(true);

    SdpaArgs args;
    const int rc = sdpa_args(c, *type, q, k, v, args, err, err_len);
    if (rc != ATTNCHECK_OK) return rc;
    const at::Tensor out = sdpa_output(args);  // [batch, heads, q_len, value_dim]
    if (out.sizes() != at::IntArrayRef(out_sizes)) {
      set_error(err, err_len, "libtorch returned an output of shape " + c10::str(out.sizes()) + ", expected " +
                                  c10::str(at::IntArrayRef(out_sizes)));
      return 2;
    }
    // dout [batch, heads, q_len, value_dim], out's shape, through its own strides.
    const at::Tensor dout = view(grad->dout.data, out_sizes, grad->dout.stride, *type);
    const std::vector<at::Tensor> grads =
        torch::autograd::grad({out}, {q, k, v}, {dout}, /*retain_graph=*/false, /*create_graph=*/false,
                              /*allow_unused=*/true);
    if (!store(grads[0], grad->dq, q_sizes, *type, "dq", err, err_len) ||
        !store(grads[1], grad->dk, k_sizes, *type, "dk", err, err_len) ||
        !store(grads[2], grad->dv, v_sizes, *type, "dv", err, err_len))
      return 2;
    return ATTNCHECK_OK;
  } catch (const c10::Error& e) {
    set_error(err, err_len, std::string("libtorch: ") + e.what_without_backtrace());
    return 2;
  } catch (const std::exception& e) {
    set_error(err, err_len, std::string("libtorch adapter: ") + e.what());
    return 2;
  }
}

}  // namespace torch_plugin
