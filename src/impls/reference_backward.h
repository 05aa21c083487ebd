// The reference backward with knobs, each knob one of the zoo's backward
// faults: what zoo/knobbed_attention_v2.h is for forward, except that here the
// knobs sit in the reference itself, so a zoo member differs from `reference`
// in exactly its one fault. With the default BackwardKnobs it is `reference`'s
// backward (reference_backward_v2).
//
// Example usage (a zoo member):
//   int grad_no_rowsum_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t n) {
//     return detail::reference_backward_with(call, grad, err, n, {.no_rowsum = true});
//   }
#pragma once

#include <cstddef>

#include "attncheck/plugin_v2.h"

namespace attncheck::detail {

struct BackwardKnobs {
  bool no_rowsum = false;                   // dS = P * dP: the rowsum term D_i = rowsum(dO_i * O_i) left out
  bool dq_unscaled = false;                 // dQ = dS K, without the scale
  bool gqa_first_head = false;              // a kv head's dK and dV from the first query head of its group only
  bool dv_unnormalised = false;             // dV from exp(z - rowmax), never divided by the row's sum
  bool nan_empty_rows = false;              // dq of a row that sees no key is NaN (0/0 of its empty normaliser)
  bool softcap_derivative_dropped = false;  // dS not multiplied by 1 - tanh^2(s / softcap)
  bool dk_accumulated = false;              // dk += onto what the buffer held, not overwritten
  bool dk_rows_reversed = false;            // dk summed over the query rows last to first (same value, other bits)
};

// The ABI v2 backward of `reference` with these knobs turned.
int reference_backward_with(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, std::size_t err_len,
                            const BackwardKnobs& knobs);

}  // namespace attncheck::detail
