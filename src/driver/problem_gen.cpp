#include "driver/problem_gen.h"

#include "gen/sample_memo.h"

namespace attncheck {

rc::Gen<Problem> gen_problem(const GenOptions& options) {
  return rc::Gen<Problem>([options](const rc::Random& random, int size) {
    rc::Random r = random;
    return rc::shrinkable::shrinkRecur(sample_problem(options, r.next(), size), [options](const Problem& p) {
      return rc::seq::fromContainer(shrink_problem(p, options));
    });
  });
}

rc::Gen<std::shared_ptr<const Problem>> gen_shared_problem(const GenOptions& options) {
  using Shared = std::shared_ptr<const Problem>;
  auto key = std::make_shared<const std::string>(gen_options_key(options));
  return rc::Gen<Shared>([options, key](const rc::Random& random, int size) {
    rc::Random r = random;
    return rc::shrinkable::shrinkRecur(sample_problem_shared(options, *key, r.next(), size), [options](const Shared& p) {
      return rc::seq::map(rc::seq::fromContainer(shrink_problem(*p, options)),
                          [](Problem&& x) -> Shared { return std::make_shared<const Problem>(std::move(x)); });
    });
  });
}

}  // namespace attncheck
