// fuzz_gradients: bytes -> a backward Problem (fuzz_backward_problem) -> the
// backward pass of a built-in reference (reference, naive, online: each runs
// its forward, then its backward on its own out and lse), judged against the
// gradient oracle (grad_oracle + compare_grads_to_oracle, what the law
// grad_matches_oracle checks) or by one of the cheap gradient laws (Law::cheap,
// Law::required has kBackwardFeature). The first two bytes pick the pair as in
// fuzz_differential (law_sweep.h; byte 1 below 64: the oracle). The references
// are correct by construction, so a finding is a bug in a backward kernel, a
// gradient law, the gradient bound or the backward call's encoding.
//
// Run: build-fuzz/fuzz/fuzz_gradients -dict=fuzz/dicts/problem.dict fuzz-work/g fuzz/corpus/fuzz_gradients
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "finding.h"
#include "law_sweep.h"
#include "oracle/grad_oracle.h"
#include "fuzz_problems.h"

using namespace attncheck;

namespace {

// The oracle's verdict on one backward call, saved under the law that checks
// the same (so `attncheck replay` repeats it).
void judge_by_oracle(Implementation& impl, const Problem& p) {
  const Outcome o = impl.run(p);
  if (const std::optional<Verdict> v = unusable(o)) {
    if (v->status == VerdictStatus::fail) fuzz::report_finding(p, "grad_matches_oracle", impl, v->message);
    if (v->status == VerdictStatus::fault)
      fuzz::report_finding(p, "grad_matches_oracle", impl, "process fault: " + v->message);
    return;  // unsupported: nothing to judge
  }
  const GradComparison c = compare_grads_to_oracle(p, grad_oracle(p), o);
  if (!c.ok()) fuzz::report_finding(p, "grad_matches_oracle", impl, c.message());
}

}  // namespace

// Refuses a bad ATTNCHECK_FUZZ_PROFILE / _SHAPES / _MAX_* before any input runs.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::announce_shapes("fuzz_gradients");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // nullptr first: the oracle (fuzz::gradient_judges).
  static const std::vector<const Law*> judges = fuzz::gradient_judges();
  static const std::vector<std::unique_ptr<Implementation>> impls = [] {
    std::vector<std::unique_ptr<Implementation>> r = fuzz::backward_references();
    if (r.empty()) fuzz::report_defect("fuzz_gradients: no built-in reference has a backward");
    return r;
  }();
  const fuzz::Pick pick = fuzz::pick_pair(impls, judges, data, size);
  for (Implementation* impl : pick.impls) {
    // Drawn within what the implementation declares (its ABI v2 features).
    const Problem p = fuzz::fuzz_backward_problem(data, size, impl->features());
    for (const Law* law : pick.laws) {
      if (law) fuzz::judge(*impl, p, {law});
      else judge_by_oracle(*impl, p);
    }
  }
  return 0;
}
