#include "impls/in_process.h"

#include <cstdlib>
#include <memory>
#include <utility>

#include "impls/builtins.h"
#include "problem/call_layout.h"

namespace attncheck {

Outcome InProcessImplementation::run(const Problem& problem) {
  if (backward_needs_lse(problem, features())) {
    Problem with_lse = problem;
    with_lse.lse_requested = true;
    Outcome o = run(with_lse);
    o.lse.clear();
    return o;
  }
  if (std::string why = undeclared_features(problem, features()); !why.empty())
    return {CallStatus::unsupported, {}, why};
  const CallLayout layout = layout_for(problem, forward_v2_ ? 2 : 1);
  struct Free { void operator()(uint8_t* p) const { std::free(p); } };
  std::unique_ptr<uint8_t, Free> region(static_cast<uint8_t*>(std::aligned_alloc(CallLayout::kAlign, layout.total)));
  if (!region) return {CallStatus::error, {}, "cannot allocate the call's buffers"};
  encode_call(problem, layout, region.get());
  char err[512] = {0};
  int rc = 0;
  if (!forward_v2_) {
    const attncheck_call call = abi_call(problem, layout, region.get());
    rc = forward_(&call, err, sizeof err);
    err[sizeof err - 1] = 0;
    return outcome_from_return(rc, err, problem, layout, region.get());
  }
  const attncheck_call_v2 call = abi_call_v2(problem, layout, region.get());
  rc = forward_v2_(&call, err, sizeof err);
  err[sizeof err - 1] = 0;
  Outcome forward = outcome_from_return(rc, err, problem, layout, region.get());
  if (!problem.is_backward() || !backward_v2_ || forward.status != CallStatus::ok) return forward;
  // A backward problem (declared: backward_v2_ is set): backward on the same
  // region and call, with forward's own out and lse as its inputs.
  const ForwardOutputs before = snapshot_forward_outputs(layout, region.get());
  const attncheck_grad grad = abi_grad(problem, layout, region.get());
  char grad_err[512] = {0};
  rc = backward_v2_(&call, &grad, grad_err, sizeof grad_err);
  grad_err[sizeof grad_err - 1] = 0;
  return backward_outcome_from_return(rc, grad_err, problem, layout, region.get(), before, std::move(forward));
}

std::unique_ptr<Implementation> make_builtin(std::string_view name) {
  const BuiltinInfo* info = find_builtin(name);
  if (!info) return nullptr;
  if (info->reset) info->reset();
  if (info->forward_v2)
    return std::make_unique<InProcessImplementation>(std::string(info->name), info->forward_v2, info->features,
                                                     info->backward_v2);
  return std::make_unique<InProcessImplementation>(std::string(info->name), info->forward);
}

}  // namespace attncheck
