// The RapidCheck generator of Problems: draws through sample_problem and
// shrinks through shrink_problem (problem/generators.h), so RapidCheck,
// libFuzzer's sampler and the benchmarks see the same distribution.
//
// Example usage:
//   GenOptions opts;
//   opts.dtypes = {DType::f64};
//   rc::Gen<Problem> g = gen_problem(opts);
//   rc::check([&] { const Problem p = *g; ... });
#pragma once

#include <rapidcheck.h>

#include "problem/generators.h"

namespace attncheck {

rc::Gen<Problem> gen_problem(const GenOptions& options);

}  // namespace attncheck
