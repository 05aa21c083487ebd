// Zoo (ABI v3 PAGED): the pool's slot and kv-head strides swapped: slot s of
// kv head h read at page*stride[0] + s*stride[1] + h*stride[2], the layout
// fault of a kernel written for one page layout (FlashInfer's NHD and HND
// differ exactly so) and handed the other. Right when both strides agree (one
// kv head in a dense NHD pool: both are head_dim) and on every unpaged call.
// Caught by paged_equals_contiguous (the padded keys are read right) and
// matches_oracle.
#include <algorithm>

#include "impls/kernels.h"
#include "impls/zoo/paged_members.h"

namespace attncheck {

int paged_slot_stride_from_head_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  if (!call || !call->block_table) return reference_forward_v3(call, err, err_len);
  attncheck_call_v3 c = *call;
  for (attncheck_view* view : {&c.v2.k, &c.v2.v}) std::swap(view->stride[1], view->stride[2]);  // the fault
  // The swapped view must stay inside the pool the caller gave (a real kernel
  // would read past it, which in-process would be memory the checker owns).
  // Within a page: the last kv head's last slot, through (head, slot) strides.
  auto reach = [&](const attncheck_view& view) {
    return (c.v2.kv_heads - 1) * view.stride[1] + (call->page_size - 1) * view.stride[2];
  };
  if (reach(c.v2.k) > reach(call->v2.k) || reach(c.v2.v) > reach(call->v2.v)) return reference_forward_v3(call, err, err_len);
  return reference_forward_v3(&c, err, err_len);
}

}  // namespace attncheck
