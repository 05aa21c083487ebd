// Zoo: a stride mix-up. The output of (batch b, head h) is written where
// (batch h, head b) belongs: the block index is computed as h * batch + b
// instead of b * heads + h, as when the two axes are exchanged in a layout.
// Invisible with one batch and one head; a permutation of whole blocks otherwise.
#include <cstring>
#include <vector>

#include "impls/kernels.h"
#include "impls/typed_call.h"
#include "problem/dtype.h"

namespace attncheck {

int batch_head_swapped_forward(const attncheck_call* call, char* err, size_t err_len) {
  if (!call || !call->out) return report(err, err_len, kCallError, "invalid call: null pointer");
  const DTypeInfo* dtype = find_dtype(detail::enum_value(call->dtype));
  if (!dtype) return reference_forward(call, err, err_len);  // which answers UNSUPPORTED
  const std::size_t elem = dtype->bytes;
  const std::size_t block = static_cast<std::size_t>(call->q_len * call->value_dim) * elem;  // one (b, h)
  std::vector<unsigned char> right(block * static_cast<std::size_t>(call->batch * call->heads));
  attncheck_call c = *call;
  c.out = right.data();
  const int rc = reference_forward(&c, err, err_len);
  if (rc != ATTNCHECK_OK) return rc;
  auto* out = static_cast<unsigned char*>(call->out);
  for (int64_t b = 0; b < call->batch; ++b)
    for (int64_t h = 0; h < call->heads; ++h)
      std::memcpy(out + static_cast<std::size_t>(h * call->batch + b) * block,
                  right.data() + static_cast<std::size_t>(b * call->heads + h) * block, block);
  return ATTNCHECK_OK;
}

}  // namespace attncheck
