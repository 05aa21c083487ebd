// The RapidCheck generator of Problems: draws through sample_problem and
// shrinks through shrink_problem (gen/generators.h). The fuzz targets draw
// through the same generator, reading its choices from their bytes instead of
// RapidCheck's random stream (problem_from_bytes, fuzz/fuzz_problems.h), and
// the benchmarks through sample_problem: one definition of a problem for all.
//
// gen_shared_problem is the same generator over shared, immutable Problems
// (run_law's): RapidCheck copies a generated value out of its shrinkable each
// time a property reads it, and a Problem's tensors are up to megabytes; the
// draws go through the sample memo (gen/sample_memo.h), so the targets of
// a law with the same features share them.
//
// Example usage:
//   GenOptions opts;
//   opts.dtypes = {DType::f64};
//   rc::Gen<Problem> g = gen_problem(opts);
//   rc::check([&] { const Problem p = *g; ... });
#pragma once

#include <rapidcheck.h>

#include <memory>

#include "gen/generators.h"

namespace attncheck {

rc::Gen<Problem> gen_problem(const GenOptions& options);

// The same values and shrinks as gen_problem, in the same order.
rc::Gen<std::shared_ptr<const Problem>> gen_shared_problem(const GenOptions& options);

}  // namespace attncheck
