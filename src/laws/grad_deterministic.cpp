// grad_deterministic: the same backward call made twice returns bitwise the
// same gradients (NaN payloads and the sign of zero included), also after a
// different backward call on a problem of the same shape, as FlashAttention's
// race-condition test asks of its deterministic mode.
//
// Catches: gradients accumulated onto stale results (dk += what an earlier
// call left; onto attncheck's fresh poison the NaN repeats, and
// grad_linear_in_dout and the others see it), reductions over query tiles whose
// order depends on thread timing (atomic adds into dQ, dK, dV), scratch
// memory read before it is written, state kept between calls.
// Cannot catch: a backward that is wrong the same way every time; a
// nondeterministic backward that is documented as such (FlashAttention's
// default dQ accumulation): such an implementation fails this law by design.
#include <algorithm>

#include "law_framework/bitwise_outputs.h"
#include "law_framework/grad_support.h"

namespace attncheck {

namespace {

std::optional<std::string> differs(const Problem& p, const Outcome& a, const Outcome& b, const char* when) {
  if (auto m = grads_bit_difference(p, a, b, when)) return *m + "; a deterministic backward repeats every bit";
  return std::nullopt;
}

// A different backward problem of the same shape: V and dout negated, Q's
// elements reversed, so the intervening call leaves other values behind.
Problem other_of_same_shape(const Problem& p) {
  Problem r = p;
  for (double& x : r.v) x = -x;
  for (double& x : r.dout) x = -x;
  std::reverse(r.q.begin(), r.q.end());
  return r;
}

}  // namespace

Law law_grad_deterministic() {
  Law law;
  law.name = "grad_deterministic";
  law.statement = "the same backward call twice gives bitwise identical gradients, also after a different call in between";
  law.features = kEveryFeature;
  law.required = kBackwardFeature;
  law.check = [](Implementation& impl, const Problem& drawn) {
    const Problem p = backward_of(drawn);
    Outcome first, second, scratch, third;
    if (auto bad = run_backward(impl, p, first)) return *bad;
    if (auto bad = run_backward(impl, p, second)) return *bad;
    if (auto m = differs(p, first, second, "between two identical calls in a row")) return Verdict::fail(*m);
    if (auto bad = run_backward(impl, other_of_same_shape(p), scratch)) return *bad;
    if (auto bad = run_backward(impl, p, third)) return *bad;
    if (auto m = differs(p, first, third, "after a call on other values of the same shape")) return Verdict::fail(*m);
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
