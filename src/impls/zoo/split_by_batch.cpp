// Zoo (ABI v3 promise BATCH_INVARIANT): a forward whose path, and so its
// order of summation over the keys, is chosen by the batch size, as split-KV
// heuristics choose how many splits fill the machine from the number of
// sequences (the vLLM and FlashInfer class of batch-dependent outputs; a
// determinism suite whose prompts fit one key block misses it, vllm#58131).
// Up to 2 sequences: one query row at a time over all the keys (naive's
// order); 3 or more: key tiles streamed with a running max and rescaled sums
// (online's order). Both are correct: each result lies within the bound, and
// the same sequence comes back with other last bits in a batch of 3. It
// promises batch invariance all the same: batch_invariance (and
// batch_composition_independence, bit for bit under the promise) catch it.
#include "impls/kernels.h"
#include "impls/zoo/promise_members.h"

namespace attncheck {

int split_by_batch_forward(const attncheck_call* call, char* err, size_t err_len) {
  return call->batch >= 3 ? online_forward(call, err, err_len) : naive_forward(call, err, err_len);
}

int split_by_batch_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len) {
  return call->batch >= 3 ? online_forward_v2(call, err, err_len) : naive_forward_v2(call, err, err_len);
}

}  // namespace attncheck
