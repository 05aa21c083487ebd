// deterministic: the same call made twice returns bitwise the same output
// (NaN payloads and the sign of zero included), also when a different call
// on a problem of the same shape came in between.
//
// Catches: reads of uninitialised memory (scratch buffers, padding of the last
// tile), state kept between calls (a cache keyed on the shape, a buffer not
// cleared, a static accumulator), reductions whose order depends on thread
// timing or on the address of the buffers.
// Cannot catch: an implementation that is wrong in the same way every time;
// nondeterminism too rare to show in three calls.
#include <algorithm>

#include "law_framework/bitwise_outputs.h"
#include "law_framework/law_support.h"

namespace attncheck {

namespace {

// A different problem of the same shape: V negated and Q's elements reversed,
// so the intervening call leaves different values behind in any state.
Problem other_of_same_shape(const Problem& p) {
  Problem r = p;
  for (double& x : r.v) x = -x;
  std::reverse(r.q.begin(), r.q.end());
  return r;
}

std::optional<std::string> differs(const Problem& p, const std::vector<double>& a, const std::vector<double>& b,
                                   const char* when) {
  if (auto m = out_bit_difference(p, a, b, when)) return *m + "; a deterministic implementation repeats every bit";
  return std::nullopt;
}

}  // namespace

Law law_deterministic() {
  Law law;
  law.name = "deterministic";
  // The work cap of its cases (GenOptions::case_calls): the case three times and another problem between.
  law.tailor = [](GenOptions& g) { g.case_calls = 4; };
  law.statement = "the same call twice gives bitwise identical outputs, also after a different call in between";
  law.check = [](Implementation& impl, const Problem& p) {
    std::vector<double> first, second, scratch, third;
    if (auto bad = run_for(impl, p, first)) return *bad;
    if (auto bad = run_for(impl, p, second)) return *bad;
    if (auto m = differs(p, first, second, "between two identical calls in a row")) return Verdict::fail(*m);
    const Problem other = other_of_same_shape(p);
    if (auto bad = run_for(impl, other, scratch)) return *bad;
    if (auto bad = run_for(impl, p, third)) return *bad;
    if (auto m = differs(p, first, third, "after a call on other values of the same shape"))
      return Verdict::fail(*m).on({{"the call", "", p},
                                   {"the call between", "the case with v negated and q's elements reversed", other}});
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
