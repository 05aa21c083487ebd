// Zoo (backward): reference's forward, and reference's backward whose dk
// reduction order changes from call to call. A FlashAttention-2 backward that
// splits the query rows over thread blocks adds each block's dk contribution
// with atomicAdd: the order of the additions is the order in which the blocks
// finish, a race, so two identical calls round dk differently in the last
// bits. Every result is as accurate as a correct backward's; only
// grad_deterministic tells it apart (`deterministic` for the forward's
// counterpart, nondeterministic_order.cpp).
//
// The race is modelled without threads, so that a check stays reproducible:
// odd calls since the last reset sum dk over the query rows last to first,
// even calls first to last (dq and dv are reference's).
#include <atomic>

#include "impls/kernels.h"
#include "impls/reference_backward.h"

namespace attncheck {

namespace {

// The backward calls since the last reset (grad_dk_race_order_reset: each new
// instance of the built-in), so that the order a call takes depends only on
// the calls made to that instance, whichever worker (--jobs) runs the law.
std::atomic<unsigned> calls{0};

}  // namespace

int grad_dk_race_order_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err,
                                   size_t err_len) {
  const bool reversed = calls.fetch_add(1) % 2 == 1;
  return detail::reference_backward_with(call, grad, err, err_len, {.dk_rows_reversed = reversed});
}

void grad_dk_race_order_reset() { calls = 0; }

}  // namespace attncheck
