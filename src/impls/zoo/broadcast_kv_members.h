// The zoo members of ABI version 3's broadcast K and V (a view with stride 0 on
// its batch or kv-head axis): reference's correct forward with one realistic
// fault of a kernel handed an expanded tensor, correct on every call whose k
// and v are dense. Their rows: builtins.cpp.
#pragma once

#include <cstddef>

#include "attncheck/plugin_v3.h"

namespace attncheck {

// broadcast_stride_as_dense: a k or v view with a 0 stride on axis 0 or 1 is
// read with dense strides recomputed from the extents.
int broadcast_stride_as_dense_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);

}  // namespace attncheck
