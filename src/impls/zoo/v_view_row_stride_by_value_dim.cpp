// Zoo (ABI v3 V_VIEW_OF_K): an MLA kernel that, handed v as a view of k
// (v.data == k.data, v's strides k's), steps V's rows by value_dim as if v were
// its own dense tensor, while K's rows step by k's stride: key 0 of each (batch,
// kv head) is read right and every later key's value comes from the middle of
// an earlier key's row (ik_llama.cpp#2031, the MLA path drifting after the
// first block). v's row stride is then at most k's (value_dim <= head_dim <= k's
// row stride), so the faulty view stays inside the buffer the caller gave.
// Right when value_dim equals k's row stride (a dense k with value_dim =
// head_dim), on every call whose v has its own memory and in stored formats. Caught by
// mla_matches_oracle (against the oracle) and v_view_equals_copy (the copy is
// read right).
#include "impls/kernels.h"
#include "impls/zoo/v_view_members.h"

namespace attncheck {

int v_view_row_stride_by_value_dim_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  // (In a stored format v's strides count units, not channels: left to the dtype's calls.)
  if (!call || call->v2.v.data != call->v2.k.data || call->v_format != ATTNCHECK_KV_DTYPE)
    return reference_forward_v3(call, err, err_len);
  attncheck_call_v3 c = *call;
  c.v2.v.stride[2] = c.v2.value_dim;  // the fault: rows (slots when paged) value_dim apart
  return reference_forward_v3(&c, err, err_len);
}

}  // namespace attncheck
