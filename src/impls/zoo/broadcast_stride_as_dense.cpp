// Zoo (ABI v3 BROADCAST_KV): a k or v view with a stride of 0 on its batch or
// kv-head axis is taken for a contiguous tensor and read with dense strides
// recomputed from the extents, [batch][kv_heads][kv_len][dim], as the kernel
// behind pytorch/pytorch#191937 did (wrong output for key_strides (3584, 0,
// 256, 1): an expanded key read as if materialized). Past the expanded
// tensor's one slice it reads memory that is not the tensor's; emulated here
// on a copy of the view's bytes followed by zeros, so that an in-process
// member never reads outside the call's buffers. Dense, strided, packed and
// paged views (whose stride[0] is 0 without any broadcast) are read right.
// Caught by broadcast_equals_materialized wherever a batch entry past 0 (a kv
// head past 0) has a visible key.
#include <cstring>
#include <vector>

#include "impls/kernels.h"
#include "impls/zoo/broadcast_kv_members.h"

namespace attncheck {

namespace {

std::size_t broadcast_dense_element_bytes(attncheck_dtype t) {
  return t == ATTNCHECK_F64 ? 8 : t == ATTNCHECK_F32 ? 4 : 2;
}

// The view's bytes (its span with its own strides) copied into a zeroed dense
// [batch][kv_heads][kv_len][cols] buffer, and the view re-pointed there with
// dense strides: the fault.
void read_as_dense(const attncheck_call_v2& c, attncheck_view& view, int64_t cols, std::vector<uint8_t>& into) {
  if (view.stride[0] != 0 && view.stride[1] != 0) return;
  const std::size_t e = broadcast_dense_element_bytes(c.dtype);
  const int64_t extents[4] = {c.batch, c.kv_heads, c.kv_len, cols};
  int64_t span = 1;
  for (int a = 0; a < 4; ++a) span += (extents[a] - 1) * view.stride[a];
  const int64_t dense = c.batch * c.kv_heads * c.kv_len * cols;
  into.assign(static_cast<std::size_t>(dense > span ? dense : span) * e, 0);
  std::memcpy(into.data(), view.data, static_cast<std::size_t>(span) * e);
  view.data = into.data();
  view.stride[3] = 1, view.stride[2] = cols, view.stride[1] = c.kv_len * cols, view.stride[0] = c.kv_heads * c.kv_len * cols;
}

}  // namespace

int broadcast_stride_as_dense_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  if (!call || call->cu_seqlens_k || call->block_table || call->k_format != ATTNCHECK_KV_DTYPE ||
      call->v_format != ATTNCHECK_KV_DTYPE)
    return reference_forward_v3(call, err, err_len);
  attncheck_call_v3 c = *call;
  std::vector<uint8_t> k, v;
  read_as_dense(c.v2, c.v2.k, c.v2.head_dim, k);
  read_as_dense(c.v2, c.v2.v, c.v2.value_dim, v);
  return reference_forward_v3(&c, err, err_len);
}

}  // namespace attncheck
