// The zoo members of ABI version 3's ALiBi slopes per (batch, head)
// (alibi_batch_stride): reference's correct forward with one realistic fault
// of a kernel that takes FlashAttention-2's (batch, nheads) slopes, correct on
// every call whose slopes are version 2's [heads]. Their rows: builtins.cpp.
#pragma once

#include <cstddef>

#include "attncheck/plugin_v3.h"

namespace attncheck {

// alibi_batch_first_row: batch entry 0's row of slopes for every entry
// (alibi_batch_stride read as 0).
int alibi_batch_first_row_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);

}  // namespace attncheck
