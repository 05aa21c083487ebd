// Zoo (ABI v3 PAGED): the summation order follows where the pages lie: naive's
// loops when the first table entry names an odd page, reference's whole
// matrices otherwise. Both are correct to the bound; the last bits of out
// and lse then depend on the pool's physical order, as flex attention's did
// (pytorch/pytorch#182593). Deterministic: the same call gives the same bits,
// so page_permutation_bit_identical demands bit-identity and catches it.
// Unpaged calls are reference's.
#include "impls/kernels.h"
#include "impls/zoo/paged_members.h"

namespace attncheck {

int paged_path_by_page_number_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  if (call && call->block_table && call->block_table[0] % 2 == 1) return naive_forward_v3(call, err, err_len);
  return reference_forward_v3(call, err, err_len);
}

}  // namespace attncheck
