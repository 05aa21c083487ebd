// The zoo members of ABI version 3's V as a view of K (MLA): reference's
// correct v3 forward with one realistic fault of an MLA kernel each, correct
// whenever v is not a view of k. Their rows: builtins.cpp.
#pragma once

#include <cstddef>

#include "attncheck/plugin_v3.h"

namespace attncheck {

// v_view_row_stride_by_value_dim: when v.data == k.data, V's rows (keys, or a
// page's slots) stepped by value_dim rather than by k's stride (ik_llama.cpp#2031:
// right for the first key, drifting after it).
int v_view_row_stride_by_value_dim_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);

}  // namespace attncheck
