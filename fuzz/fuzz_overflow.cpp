// fuzz_overflow: extreme magnitudes and edge values against the laws about the
// edges of the range, for every built-in reference:
//   finite_for_finite_inputs: inside the representable domain (oracle.h,
//                             row_in_finite_domain) every output is finite;
//   fully_masked_rows_zero:   a row that sees no key outputs exactly zeros;
//   nan_propagates:           a NaN in a visible input shows up in the outputs it feeds.
// The first two bytes pick the reference and the law (law_sweep.h), the third
// the value mix: half the inputs are all finite (kFiniteOnly: so
// finite_for_finite_inputs applies), half may hold ±inf and NaN.
//
// Run: build-fuzz/fuzz/fuzz_overflow fuzz/corpus/fuzz_overflow
#include <cstddef>
#include <cstdint>

#include "law_sweep.h"
#include "fuzz_problems.h"

using namespace attncheck;

// Refuses a bad ATTNCHECK_FUZZ_PROFILE / _SHAPES / _MAX_* before any input runs.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::announce_shapes("fuzz_overflow");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<const Law*> laws =
      fuzz::laws_named({"finite_for_finite_inputs", "fully_masked_rows_zero", "nan_propagates"});
  static const std::vector<std::unique_ptr<Implementation>> impls = fuzz::references();
  const fuzz::Pick pick = fuzz::pick_pair(impls, laws, data, size);
  const bool finite = size == 0 || (data[0] & 1) == 0;
  if (size > 0) { ++data; --size; }
  // Drawn within what each implementation declares (its ABI v2 features).
  for (Implementation* impl : pick.impls)
    fuzz::judge(*impl, fuzz::fuzz_problem(data, size, impl->features(), finite), pick.laws);
  return 0;
}
