// The zoo members that make an ABI version 3 promise (ATTNCHECK_PROMISE_*)
// and break it in the last bits only: every result as accurate as a correct
// kernel's, so only the promise laws (and batch_composition_independence,
// bit for bit under BATCH_INVARIANT) catch them. Their rows: builtins.cpp.
#pragma once

#include <cstddef>

#include "attncheck/plugin_v3.h"

namespace attncheck {

// split_by_batch (BATCH_INVARIANT): the path chosen by the batch size.
int split_by_batch_forward(const attncheck_call* call, char* err, size_t err_len);
int split_by_batch_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len);
// path_by_alignment (DETERMINISTIC): the path chosen by out's alignment.
int path_by_alignment_forward(const attncheck_call* call, char* err, size_t err_len);
int path_by_alignment_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len);
// grad_dk_order_by_alignment (DETERMINISTIC_BACKWARD): dk's row order chosen by dk's alignment.
int grad_dk_order_by_alignment_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err,
                                           size_t err_len);

}  // namespace attncheck
