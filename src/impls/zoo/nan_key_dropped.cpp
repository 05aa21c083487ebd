// Zoo: a key's weight is computed only when its score compares > -inf, the
// test a kernel that applies masks by adding -inf to the scores keeps for
// masked keys (p = s > -inf ? exp(s - m) : 0, the row max over the same
// keys). A NaN score compares false: a NaN in k[j] drops key j from every
// row, and the row's other keys share its weight, so the output is finite and
// plausible where it must be NaN (the bad input is laundered, not reported).
// A NaN in q makes every score of its row NaN: the row's sum is 0 and its
// output 0 / 0 = NaN, as it must be. With finite inputs every score is finite
// and the result is correct attention: only nan_propagates (opt-in) tells.
#include "impls/kernels.h"
#include "impls/zoo/knobbed_attention.h"

namespace attncheck {

int nan_key_dropped_forward(const attncheck_call* call, char* err, size_t err_len) {
  return detail::knobbed_forward(call, err, err_len, {.nan_score_drops_key = true});
}

}  // namespace attncheck
