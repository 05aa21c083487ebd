#include "driver/problem_gen.h"

namespace attncheck {

rc::Gen<Problem> gen_problem(const GenOptions& options) {
  return rc::Gen<Problem>([options](const rc::Random& random, int size) {
    rc::Random r = random;
    return rc::shrinkable::shrinkRecur(sample_problem(options, r.next(), size), [options](const Problem& p) {
      return rc::seq::fromContainer(shrink_problem(p, options));
    });
  });
}

}  // namespace attncheck
