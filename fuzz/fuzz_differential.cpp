// fuzz_differential: bytes -> Problem (fuzz_problems.h) -> a built-in reference (reference,
// naive, online) judged against the oracle (matches_oracle) or one of the
// cheap laws; the first two bytes pick the pair (law_sweep.h). The references
// are correct by construction, so any finding is a bug in a reference, a law,
// the oracle's bound or the call encoding: the suite's own soundness, checked
// with coverage guidance.
//
// Run: build-fuzz/fuzz/fuzz_differential -dict=fuzz/dicts/problem.dict fuzz-work/d fuzz/corpus/fuzz_differential
#include <cstddef>
#include <cstdint>

#include "law_sweep.h"
#include "fuzz_problems.h"

using namespace attncheck;

// Refuses a bad ATTNCHECK_FUZZ_PROFILE / _SHAPES / _MAX_* before any input runs.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::announce_shapes("fuzz_differential");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<const Law*> laws = fuzz::differential_laws();
  static const std::vector<std::unique_ptr<Implementation>> impls = fuzz::references();
  const fuzz::Pick pick = fuzz::pick_pair(impls, laws, data, size);
  // Drawn within what each implementation declares (its ABI v2 features).
  for (Implementation* impl : pick.impls)
    fuzz::judge(*impl, fuzz::fuzz_problem(data, size, impl->features()), pick.laws);
  return 0;
}
