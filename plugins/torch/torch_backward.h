// The libtorch adapter's v2 backward entry (torch_backward.cpp).
#ifndef ATTNCHECK_PLUGINS_TORCH_BACKWARD_H
#define ATTNCHECK_PLUGINS_TORCH_BACKWARD_H

#include <cstddef>

#include "attncheck/plugin_v2.h"

namespace torch_plugin {

// attncheck_impl_v2::backward: dq, dk, dv of sum(out * dout) by libtorch 1.13's
// autograd through the same at::_scaled_dot_product_attention call forward makes.
int backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t err_len);

}  // namespace torch_plugin

#endif
