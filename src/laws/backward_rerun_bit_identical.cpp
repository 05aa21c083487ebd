// backward_rerun_bit_identical: under ABI version 3's
// ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD, two backward calls that differ
// only in the addresses of their buffers and in bytes that must not influence
// anything write bit-identical dq, dk and dv (FlashAttention's
// deterministic=True; docs/abi/plugin-abi-v3.md, "Promises"). The backward
// case is called, then again with every buffer moved 64 to 8128 bytes further
// and every padding row and key of q, k, v and dout replaced by NaN,
// infinities and the largest values (law_framework/promise_calls.h). Only an
// implementation that makes the promise is judged; any other is skipped with
// the reason (grad_deterministic still asks every backward to repeat the same
// call in place).
//
// Catches what grad_deterministic cannot: a dk or dv reduction over query
// tiles whose order follows the buffers' alignment or addresses (a split of
// the rows chosen by where dq starts), padding rows of dout or q that reach
// a gradient by a last bit, and the atomics order grad_deterministic sees.
// Cannot catch: nondeterminism too rare to show in two calls; dead bytes of
// packed calls (their slack: the packed variant comes with packed backward
// calls) and the gaps of strided views, which stay NaN in both calls.
#include "law_framework/bitwise_outputs.h"
#include "law_framework/grad_support.h"
#include "law_framework/promise_calls.h"
#include "problem/transforms.h"

namespace attncheck {

Law law_backward_rerun_bit_identical() {
  Law law;
  law.name = "backward_rerun_bit_identical";
  law.statement = "ABI v3 promise DETERMINISTIC_BACKWARD: the backward call again, its buffers elsewhere and its "
                  "padding changed, gives bitwise identical dq, dk and dv";
  law.features = kAllFeatures | kBackwardFeature;  // version 2's shape: not packed (see above)
  law.required = kBackwardFeature;
  law.required_promises = ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD;
  law.check = [](Implementation& impl, const Problem& drawn) {
    const Problem p = backward_of(drawn);
    Outcome first, second;
    if (auto bad = run_backward(impl, p, first)) return *bad;
    const std::size_t shift = moved_buffers_shift(problem_fingerprint(p));
    const Problem again = with_dead_bytes_changed(p);
    if (!impl.shift_buffers(shift))
      return Verdict{VerdictStatus::unsupported, "not called: " + impl.name() + " cannot place its buffers elsewhere",
                     CallStatus::unsupported, {}, {}};
    std::optional<Verdict> bad = run_backward(impl, again, second);
    impl.shift_buffers(0);
    if (bad) return *bad;
    const std::string when = "when the backward call is made again " + moved_call_text(p, shift);
    if (auto m = grads_bit_difference(p, first, second, when))
      return Verdict::fail(*m + "; ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD promises every bit")
          .on({{"first", "the case itself", p},
               {"again", "the case " + moved_call_text(p, shift) + " (the buffers are moved only by the law)", again}});
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
