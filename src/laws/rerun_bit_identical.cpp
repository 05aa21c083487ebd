// rerun_bit_identical: under ABI version 3's
// ATTNCHECK_PROMISE_DETERMINISTIC, two forward calls that differ only in the
// addresses of their buffers and in bytes that must not influence anything
// write bit-identical out and lse (docs/abi/plugin-abi-v3.md, "Promises").
// The case is called, then called again with every buffer moved 64 to 8128
// bytes further (another alignment to 128, 256, ... 4096 bytes) and every
// padding row and key of q, k and v replaced by NaN, infinities and the
// dtype's largest values (law_framework/promise_calls.h). Only an
// implementation that makes the promise is judged; for any other, the law is
// skipped with the reason (deterministic still asks every implementation to
// repeat the same call at the same place).
//
// Catches what rerunning the same call in place (deterministic) cannot: a
// reduction order or a vectorised path chosen by the buffers' alignment (a
// kernel that takes a 16-byte-aligned fast path for some rows), scratch
// indexed by an address, and padding that leaks into the result by a last
// bit (a masked-out padding key multiplied by 0 and added: 0 * 1e30 is 0, but
// 0 * inf is NaN), as well as every nondeterminism deterministic catches.
// Cannot catch: nondeterminism too rare to show in two calls; addresses that
// differ by more than 8 KiB or in pages (the buffers stay in one region);
// dead bytes of packed and paged calls (slack, dead page slots, unread pages:
// those calls do not exist yet, their variants of this law come with them)
// and the NaN gaps of strided views, which stay NaN in both calls.
#include "law_framework/bitwise_outputs.h"
#include "law_framework/law_support.h"
#include "law_framework/promise_calls.h"
#include "problem/transforms.h"

namespace attncheck {

Law law_rerun_bit_identical() {
  Law law;
  law.name = "rerun_bit_identical";
  law.statement = "ABI v3 promise DETERMINISTIC: the call again, its buffers elsewhere and its padding changed, "
                  "gives bitwise identical out and lse";
  law.features = kAllFeatures;
  law.required_promises = ATTNCHECK_PROMISE_DETERMINISTIC;
  law.check = [](Implementation& impl, const Problem& p) {
    const Outcome first = impl.run(p);
    if (auto bad = unusable(first)) return *bad;
    const std::size_t shift = moved_buffers_shift(problem_fingerprint(p));
    const Problem again = with_dead_bytes_changed(p);
    const Outcome second = run_with_buffers_moved(impl, again, shift);
    if (auto bad = unusable(second)) return *bad;
    const std::string when = "when the call is made again " + moved_call_text(p, shift);
    if (auto m = outputs_bit_difference(p, first, second, when))
      return Verdict::fail(*m + "; ATTNCHECK_PROMISE_DETERMINISTIC promises every bit")
          .on({{"first", "the case itself", p},
               {"again", "the case " + moved_call_text(p, shift) + " (the buffers are moved only by the law)", again}});
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
