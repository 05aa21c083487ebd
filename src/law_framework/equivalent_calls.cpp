#include "law_framework/equivalent_calls.h"

#include <cmath>
#include <sstream>

namespace attncheck {

Verdict equivalent_calls(Implementation& impl, const Problem& a, const Problem& b, const char* name_a,
                         const char* name_b) {
  const Outcome oa = impl.run(a);
  if (auto bad = unusable(oa)) return *bad;
  const Outcome ob = impl.run(b);
  if (auto bad = unusable(ob)) return *bad;
  const OracleResult ra = oracle(a), rb = oracle(b);
  // Both calls are the failure's: the reports say how each came from the case (law_calls.h).
  if (auto m = mismatch(a, oa.out, ra.bound, ob.out, rb.bound, name_a, name_b))
    return Verdict::fail(*m).on({{name_a, "", a}, {name_b, "", b}});
  bool judged = false;
  for (double x : ra.bound) judged = judged || std::isfinite(x);
  if (!judged) return Verdict::not_applicable("no row of the call is judged by the oracle's bound");
  return Verdict::pass();
}

}  // namespace attncheck
