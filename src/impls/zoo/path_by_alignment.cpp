// Zoo (ABI v3 promise DETERMINISTIC): a forward that takes a vectorised path
// when its output buffer is aligned to 128 bytes and a scalar one otherwise,
// and the two sum over the keys in different orders (key tiles with a
// running max, online's order; one row at a time, naive's). The same call at
// the same place repeats every bit (deterministic passes), and every result
// lies within the bound; the same call with its buffers elsewhere comes back
// with other last bits. It promises determinism all the same:
// rerun_bit_identical, which moves the buffers, catches it.
#include <cstdint>

#include "impls/kernels.h"
#include "impls/zoo/promise_members.h"

namespace attncheck {

namespace {

bool out_aligned_to_128(const void* out) { return (reinterpret_cast<uintptr_t>(out) & 127) == 0; }

}  // namespace

int path_by_alignment_forward(const attncheck_call* call, char* err, size_t err_len) {
  return out_aligned_to_128(call->out) ? online_forward(call, err, err_len) : naive_forward(call, err, err_len);
}

int path_by_alignment_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len) {
  return out_aligned_to_128(call->out.data) ? online_forward_v2(call, err, err_len)
                                            : naive_forward_v2(call, err, err_len);
}

}  // namespace attncheck
