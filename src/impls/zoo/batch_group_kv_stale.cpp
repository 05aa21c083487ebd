// Zoo: a per-batch offset fault. The batch is computed in groups of 4
// sequences (one launch each, as kernels do whose grid covers at most so many
// batch entries); the loop over groups advances the q, mask and out pointers
// by a group of sequences but never the k and v pointers, so sequence 4 + n
// attends with the keys and values of sequence n: [batch][heads][q_len][value_dim]
// is right for batch entries 0..3 and wrong from the fifth on.
//
// Why only batch_composition_independence catches it: every drawn case has at
// most 3 sequences (the profiles' max_batch, src/gen/profiles.cpp), on which
// this kernel is the reference itself, and no other law builds a larger batch
// (batch_head_independence and lengths_equal_slices only cut the drawn one
// apart). batch_composition_independence puts each drawn sequence into a batch
// of up to 8 with companions of other values, at a position drawn from the
// case, and compares it with the same sequence alone. The fault never shows on
// the case as drawn, so no fault model can name it there (its row has no
// diagnosis words).
#include <algorithm>

#include "impls/kernels.h"
#include "impls/typed_call.h"
#include "problem/dtype.h"

namespace attncheck {

namespace {
constexpr int64_t kBatchGroup = 4;  // sequences per launch
}  // namespace

int batch_group_kv_stale_forward(const attncheck_call* call, char* err, size_t err_len) {
  if (!call || !call->out) return report(err, err_len, kCallError, "invalid call: null pointer");
  const DTypeInfo* dtype = find_dtype(detail::enum_value(call->dtype));
  if (!dtype) return reference_forward(call, err, err_len);  // which answers UNSUPPORTED
  const int64_t elem = static_cast<int64_t>(dtype->bytes);
  // Bytes of one sequence of q [heads][q_len][head_dim] and out [heads][q_len][value_dim];
  // elements of its mask [heads][q_len][kv_len].
  const int64_t q_seq = call->heads * call->q_len * call->head_dim * elem;
  const int64_t out_seq = call->heads * call->q_len * call->value_dim * elem;
  const int64_t mask_seq = call->heads * call->q_len * call->kv_len;
  for (int64_t first = 0; first < call->batch; first += kBatchGroup) {
    attncheck_call group = *call;
    group.batch = std::min(kBatchGroup, call->batch - first);
    group.q = static_cast<const unsigned char*>(call->q) + first * q_seq;
    group.out = static_cast<unsigned char*>(call->out) + first * out_seq;
    if (call->mask) group.mask = call->mask + first * mask_seq;
    // The fault: group.k and group.v stay at sequence 0's.
    const int rc = reference_forward(&group, err, err_len);
    if (rc != ATTNCHECK_OK) return rc;
  }
  return ATTNCHECK_OK;
}

}  // namespace attncheck
